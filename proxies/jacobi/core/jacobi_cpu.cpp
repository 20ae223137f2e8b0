#include "jacobi_cpu.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>

#include "haloex/core/error.hpp"
#include "haloex/stencil/jacobi_update.hpp"
#include "jacobi_field.hpp"

namespace haloex::jacobi {
namespace {

using stencil::Line;

// Updates a line; returns the squared updates of its cells k in [normBegin, normEnd).
double updateLine(const Line& line, const double* cur, double* next, std::int64_t ax, double* packed, int normBegin,
                  int normEnd) {
    double norm = 0.0;
    for (int k = 0; k < line.count; ++k) {
        const std::int64_t c = line.at(k);
        const double v = stencil::jacobiAt(cur, c, ax);
        const double d = v - cur[c];
        if (k >= normBegin && k < normEnd) norm += d * d;
        next[c] = v;
        if (packed) packed[k] = v;
    }
    return norm;
}

}  // namespace

void initLocalField(const ProblemSpec& spec, const stencil::LocalStencil& s, std::vector<double>& a) {
    a.assign(static_cast<std::size_t>(s.numLocal()), 0.0);
    const bool periodic = spec.boundary == Boundary::Periodic;
    for (int j = -1; j <= s.ny; ++j) {
        for (int i = -1; i <= s.nx; ++i) {
            a[static_cast<std::size_t>(s.index(i, j))] =
                initialValue(s.originX + i, s.originY + j, spec.nx, spec.ny, periodic);
        }
    }
}

std::vector<double> extractInterior(const stencil::LocalStencil& s, const std::vector<double>& a) {
    std::vector<double> out(static_cast<std::size_t>(s.nx) * s.ny);
    for (int j = 0; j < s.ny; ++j) {
        std::memcpy(out.data() + static_cast<std::size_t>(j) * s.nx, a.data() + s.index(0, j),
                    static_cast<std::size_t>(s.nx) * sizeof(double));
    }
    return out;
}

FieldResult cpuReference(const ProblemSpec& spec, int iterations) {
    const long long nx = spec.nx, ny = spec.ny, ax = nx + 2;
    const bool periodic = spec.boundary == Boundary::Periodic;
    std::vector<double> a(static_cast<std::size_t>(ax * (ny + 2)));
    auto at = [&](long long i, long long j) { return (i + 1) + ax * (j + 1); };
    for (long long j = -1; j <= ny; ++j)
        for (long long i = -1; i <= nx; ++i) a[at(i, j)] = initialValue(i, j, nx, ny, periodic);
    std::vector<double> b = a;
    FieldResult result;
    for (int it = 0; it < iterations; ++it) {
        double norm = 0.0;
        for (long long j = 0; j < ny; ++j) {
            for (long long i = 0; i < nx; ++i) {
                const long long c = at(i, j);
                const double v = stencil::jacobiAt(a.data(), c, ax);
                const double d = v - a[c];
                norm += d * d;
                b[c] = v;
            }
        }
        if (periodic) {
            for (long long i = 0; i < nx; ++i) {
                b[at(i, -1)] = b[at(i, ny - 1)];
                b[at(i, ny)] = b[at(i, 0)];
            }
            for (long long j = 0; j < ny; ++j) {
                b[at(-1, j)] = b[at(nx - 1, j)];
                b[at(nx, j)] = b[at(0, j)];
            }
        }
        std::swap(a, b);
        result.normSquared = norm;
    }
    result.interior.resize(static_cast<std::size_t>(nx * ny));
    for (long long j = 0; j < ny; ++j)
        for (long long i = 0; i < nx; ++i) result.interior[static_cast<std::size_t>(i + nx * j)] = a[at(i, j)];
    return result;
}

FieldResult cpuDistributed(const ProblemSpec& spec, const stencil::LocalStencil& s, runtime::World& world,
                           int iterations) {
    std::vector<double> a, b;
    initLocalField(spec, s, a);
    b = a;
    std::vector<std::vector<double>> sendBuf(s.sends.size()), recvBuf(s.receives.size());
    for (std::size_t m = 0; m < s.sends.size(); ++m) sendBuf[m].resize(static_cast<std::size_t>(s.sends[m].send.count));
    for (std::size_t r = 0; r < s.receives.size(); ++r)
        recvBuf[r].resize(static_cast<std::size_t>(s.receives[r].recv.count));
    FieldResult result;
    for (int it = 0; it < iterations; ++it) {
        // Boundary lines first (what the GPU variants overlap), then the rest.
        double norm = 0.0;
        for (std::size_t m = 0; m < s.sends.size(); ++m) {
            const stencil::FaceMessage& msg = s.sends[m];
            norm += updateLine(msg.send, a.data(), b.data(), s.ax, sendBuf[m].data(), msg.normBegin, msg.normEnd);
        }
        for (const stencil::UnsentLine& u : s.unsentLines) {
            norm += updateLine(u.cells, a.data(), b.data(), s.ax, nullptr, u.normBegin, u.normEnd);
        }
        for (int j = 1; j + 1 < s.ny; ++j) {
            const int cols = s.interiorCols();
            norm += updateLine({s.index(1, j), 1, cols}, a.data(), b.data(), s.ax, nullptr, 0, cols);
        }
        // Pulse by pulse, in plan order, so every rank pairs the same messages.
        for (int p = 0; p < s.numPulses; ++p) {
            std::span<const std::byte> out;
            std::span<std::byte> in;
            int dest = -1, src = -1;
            for (std::size_t m = 0; m < s.sends.size(); ++m) {
                if (s.sends[m].pulse != p) continue;
                out = std::as_bytes(std::span<const double>(sendBuf[m].data(), sendBuf[m].size()));
                dest = s.sends[m].peer;
            }
            std::size_t r = 0;
            for (; r < s.receives.size(); ++r) {
                if (s.receives[r].pulse != p) continue;
                in = std::as_writable_bytes(std::span<double>(recvBuf[r].data(), recvBuf[r].size()));
                src = s.receives[r].peer;
                break;
            }
            world.sendRecvBytes(out, dest, in, src, 100 + p);
            if (src >= 0) {
                const Line& line = s.receives[r].recv;
                for (int k = 0; k < line.count; ++k)
                    b[static_cast<std::size_t>(line.at(k))] = recvBuf[r][static_cast<std::size_t>(k)];
            }
        }
        result.normSquared = norm;
        std::swap(a, b);
    }
    result.interior = extractInterior(s, a);
    return result;
}

std::vector<double> globalBlock(const std::vector<double>& global, int globalNx, int originX, int originY, int nx,
                                int ny) {
    std::vector<double> out(static_cast<std::size_t>(nx) * ny);
    for (int j = 0; j < ny; ++j) {
        const auto row = static_cast<std::size_t>(originY + j) * globalNx + originX;
        std::copy_n(global.begin() + static_cast<std::ptrdiff_t>(row), nx,
                    out.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(j) * nx));
    }
    return out;
}

FieldComparison compareFields(const double* got, const double* expected, std::size_t count) {
    FieldComparison c;
    for (std::size_t k = 0; k < count; ++k) {
        // Bitwise on purpose: -0.0 against 0.0, or NaN payloads, are differences too.
        if (std::memcmp(&got[k], &expected[k], sizeof(double)) != 0) {  // NOLINT(bugprone-suspicious-memory-comparison)
            if (c.mismatches == 0) c.firstMismatch = static_cast<std::int64_t>(k);
            ++c.mismatches;
            const double e = std::abs(got[k] - expected[k]);
            c.maxAbsError = std::max(c.maxAbsError, std::isnan(e) ? INFINITY : e);
        }
    }
    return c;
}

}  // namespace haloex::jacobi
