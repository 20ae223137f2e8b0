#include "gpu_runner.hpp"

#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <memory>

#include "../core/jacobi_cpu.hpp"
#include "halo_variant.hpp"
#include "haloex/core/error.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/cuda/device_select.hpp"
#include "haloex/halo/backend.hpp"
#include "jacobi_kernels.hpp"
#include "fused_variant.hpp"

namespace haloex::jacobi::gpu {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Runs `step` on every rank; if it failed anywhere, every rank returns the
// first failing rank's message (so a local failure cannot leave peers waiting
// in a later collective). Collective.
template <class F>
std::string agreeOnFailure(runtime::World& world, F&& step) {
    std::array<char, 512> mine{};
    try {
        step();
    } catch (const std::exception& e) {
        const std::string text = fmt::format("rank {}: {}", world.rank(), e.what());
        std::memcpy(mine.data(), text.data(), std::min(text.size(), mine.size() - 1));
    }
    const auto all = world.allGather(mine);
    for (const auto& m : all) {
        if (m[0] != '\0') return std::string(m.data());
    }
    return {};
}

// ---------------------------------------------------------------------------
// Timed runs from the initial field; the last one's result is kept.
struct Measured {
    std::vector<double> usPerIteration;
    std::vector<double> interior;
    double normSquared = 0.0;
};

void initBoth(Variant& v, const ProblemSpec& spec, const stencil::LocalStencil& s) {
    for (int parity = 0; parity < 2; ++parity) {
        initField(v.field(parity), s.nx, s.ny, s.ax, s.originX, s.originY, spec.nx, spec.ny,
                  spec.boundary == Boundary::Periodic, v.stream());
    }
}

std::vector<double> readInterior(const double* field, const stencil::LocalStencil& s, cudaStream_t stream) {
    std::vector<double> out(static_cast<std::size_t>(s.nx) * s.ny);
    HALOEX_CUDA_CHECK(cudaMemcpy2DAsync(out.data(), static_cast<std::size_t>(s.nx) * sizeof(double),
                                        field + s.index(0, 0), static_cast<std::size_t>(s.ax) * sizeof(double),
                                        static_cast<std::size_t>(s.nx) * sizeof(double), static_cast<std::size_t>(s.ny),
                                        cudaMemcpyDeviceToHost, stream));
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    return out;
}

bool normIteration(const ProblemSpec& spec, int it, int iterations) {
    return it + 1 == iterations || (spec.nccheck > 0 && (it + 1) % spec.nccheck == 0);
}

Measured measure(Variant& v, const ProblemSpec& spec, const stencil::LocalStencil& s, runtime::World& world,
                 const GpuSettings& settings, const std::string& name) {
    // One slot per norm iteration (--nccheck periods and the last iteration).
    cuda::DeviceBuffer<double> norms(static_cast<std::size_t>(spec.niter / std::max(spec.nccheck, 1) + 2));
    int lastSlot = 0;
    auto runOnce = [&](int iterations, bool printNorms) {
        initBoth(v, spec, s);
        norms.zeroAsync(v.stream());
        v.finish();
        world.barrier();  // no peer writes into this rank's fields before they are initialised
        const auto t0 = Clock::now();
        int slot = 0;
        for (int it = 0; it < iterations; ++it) {
            double* norm = nullptr;
            if (normIteration(spec, it, iterations)) {
                lastSlot = slot;
                norm = norms.data() + slot++;
            }
            v.iterate(it & 1, norm);
            if (norm && it + 1 < iterations) {
                // --nccheck: the convergence check of a real solver (host sync + reduction).
                v.finish();
                double local = 0.0;
                HALOEX_CUDA_CHECK(cudaMemcpy(&local, norm, sizeof local, cudaMemcpyDeviceToHost));
                const double total = std::sqrt(world.allReduceValue(local, runtime::ReduceOp::Sum));
                if (printNorms && world.rank() == 0) {
                    fmt::print("  {} iteration {:6d}: norm {:.10e}\n", name, it + 1, total);
                }
            }
        }
        v.finish();
        const double seconds = secondsSince(t0);
        return world.allReduceValue(seconds, runtime::ReduceOp::Max);
    };
    if (settings.warmup > 0) runOnce(settings.warmup, false);
    Measured m;
    for (int rep = 0; rep < settings.repeats; ++rep) {
        const double seconds = runOnce(spec.niter, settings.printNorms && rep == 0);
        m.usPerIteration.push_back(seconds / spec.niter * 1e6);
    }
    m.interior = readInterior(v.field(spec.niter & 1), s, v.stream());
    HALOEX_CUDA_CHECK(cudaMemcpy(&m.normSquared, norms.data() + lastSlot, sizeof(double), cudaMemcpyDeviceToHost));
    return m;
}

RunResult baseResult(const std::string& name, const ProblemSpec& spec, runtime::World& world, const GpuSettings& st) {
    return newRunResult(name, spec, world.size(), st.repeats);
}

}  // namespace

// The GPU transports in the order they run.
constexpr std::array<Backend, 5> kGpuBackends{Backend::Staged, Backend::Ipc, Backend::Nccl, Backend::Nvshmem,
                                              Backend::NcclDevice};

std::vector<std::string> defaultTransports() {
    std::vector<std::string> names;
    for (Backend b : kGpuBackends) {
        if (unavailableReason(b).empty()) names.emplace_back(toString(b));
    }
    return names;
}

std::string noGpuReason(runtime::World& world) {
    const std::int64_t count = cuda::deviceCount();
    const std::int64_t fewest = world.allReduceValue(count, runtime::ReduceOp::Min);
    if (fewest > 0) return {};
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    return fmt::format("no GPU is visible{} (check nvidia-smi and CUDA_VISIBLE_DEVICES)",
                       count == 0 ? fmt::format(" on {}", host) : std::string(" on some rank's node"));
}

void selectGpu(runtime::World& world, bool allowSharedGpus) { cuda::selectDevice(world, allowSharedGpus); }

Reference gpuReference(const ProblemSpec& spec, runtime::World& world, const GpuSettings& settings,
                       bool crossCheckCpu) {
    Reference ref;
    ref.kind = "one-GPU";
    double us = 0.0;
    std::string failure;
    if (world.rank() == 0) {
        try {
            const long long nx = spec.nx, ny = spec.ny, ax = nx + 2;
            const auto cells = static_cast<std::size_t>(ax * (ny + 2));
            const bool periodic = spec.boundary == Boundary::Periodic;
            cuda::DeviceBuffer<double> a(cells), b(cells), norm(1);
            cuda::Stream stream;
            auto runOnce = [&](int iterations) {
                for (double* f : {a.data(), b.data()})
                    initField(f, spec.nx, spec.ny, ax, 0, 0, nx, ny, periodic, stream);
                norm.zeroAsync(stream);
                HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
                const auto t0 = Clock::now();
                for (int it = 0; it < iterations; ++it) {
                    const double* cur = (it & 1) ? b.data() : a.data();
                    double* next = (it & 1) ? a.data() : b.data();
                    referenceStep(cur, next, nx, ny, it + 1 == iterations ? norm.data() : nullptr, stream);
                    if (periodic) referenceWrap(next, nx, ny, stream);
                }
                HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
                return secondsSince(t0);
            };
            if (settings.warmup > 0) runOnce(settings.warmup);
            std::vector<double> samples;
            for (int rep = 0; rep < settings.repeats; ++rep) samples.push_back(runOnce(spec.niter) / spec.niter * 1e6);
            us = summarize(samples).median;
            ref.interior.resize(static_cast<std::size_t>(nx * ny));
            const double* last = (spec.niter & 1) ? b.data() : a.data();
            HALOEX_CUDA_CHECK(cudaMemcpy2D(ref.interior.data(), static_cast<std::size_t>(nx) * sizeof(double),
                                           last + 1 + ax, static_cast<std::size_t>(ax) * sizeof(double),
                                           static_cast<std::size_t>(nx) * sizeof(double), static_cast<std::size_t>(ny),
                                           cudaMemcpyDeviceToHost));
            HALOEX_CUDA_CHECK(cudaMemcpy(&ref.normSquared, norm.data(), sizeof(double), cudaMemcpyDeviceToHost));
            if (crossCheckCpu) {
                const FieldResult cpu = cpuReference(spec, spec.niter);
                const FieldComparison c = compareFields(ref.interior.data(), cpu.interior.data(), cpu.interior.size());
                if (!c.bitwiseEqual() || relativeError(ref.normSquared, cpu.normSquared) > kNormTolerance) {
                    throwError(ErrorKind::Internal,
                               fmt::format("the one-GPU reference disagrees with the CPU reference: {} cells differ "
                                           "(max |error| {:.3e}), squared norms {:.17g} and {:.17g}",
                                           c.mismatches, c.maxAbsError, ref.normSquared, cpu.normSquared));
                }
                ref.kind = "one-GPU (itself checked against the CPU)";
            }
        } catch (const std::exception& e) {
            failure = e.what();
        }
    }
    // Rank 0's failure ends every rank's run with its message.
    std::int64_t failed = failure.empty() ? 0 : 1;
    failed = world.allReduceValue(failed, runtime::ReduceOp::Max);
    if (failed) {
        if (world.rank() == 0) throwError(ErrorKind::Runtime, "one-GPU reference: " + failure);
        throwError(ErrorKind::Runtime, "one-GPU reference failed on rank 0");
    }
    ref.usPerIteration = world.allReduceValue(us, runtime::ReduceOp::Max);
    return ref;
}

RunResult runGpuTransport(const std::string& name, const ProblemSpec& spec, const plan::GridHaloPlan& plan,
                          const stencil::LocalStencil& s, runtime::MpiWorld& world, const GpuSettings& settings,
                          const Reference& reference) {
    RunResult r = baseResult(name, spec, world, settings);
    const Backend backend = parseBackend(name);
    // Not in this build, or not with this job's GPUs (NCCL: two ranks on one); the same on every rank.
    if (std::string why = unavailableReason(backend, world); !why.empty()) {
        r.reason = why;
        return r;
    }
    if (backend == Backend::Ipc && world.localSize() != world.size()) {
        r.reason = "CUDA IPC needs every rank on one node; use staged, nccl or nvshmem across nodes";
        return r;
    }
    std::unique_ptr<Variant> variant;
    std::string failure;
    if (backend == Backend::Nvshmem || backend == Backend::NcclDevice) {
        stencil::FusedJacobiOptions o;
        o.backend = backend;
        o.path = settings.nvshmemPath;
        o.waitTimeoutSeconds = settings.waitTimeoutSeconds;
        o.maxBlocks = settings.maxBlocks;
        o.tileCells = settings.tileCells;
        variant = makeFusedVariant(s, world, o);
    } else {
        failure = agreeOnFailure(world,
                                 [&] { variant = makeHaloVariant(backend, plan, s, world, settings.allowSharedGpus); });
        // The first exchange communicates before anything that can fail locally.
        if (failure.empty()) failure = agreeOnFailure(world, [&] { variant->connect(); });
        if (!failure.empty() && backend == Backend::Ipc) {
            r.reason = "CUDA IPC is not usable here: " + failure;
            return r;
        }
    }
    if (!failure.empty()) throwError(ErrorKind::Runtime, fmt::format("setting up the {} transport: {}", name, failure));
    HALOEX_ASSERT(variant != nullptr, "every built transport has a variant");

    r.path = variant->path();
    r.notes = variant->notes();
    const Measured m = measure(*variant, spec, s, world, settings, name);
    r.usPerIteration = summarize(m.usPerIteration);
    r.singleUsPerIteration = reference.usPerIteration;
    computeScaling(r);
    checkAgainstReference(r, spec, s, world, m.interior, m.normSquared, reference);
    return r;
}

nlohmann::json gpuMachineInfo(runtime::World& world) {
    nlohmann::json info;
    const auto gpus = cuda::gatherGpuIdentities(world);
    int device = 0;
    HALOEX_CUDA_CHECK(cudaGetDevice(&device));
    cudaDeviceProp prop{};
    HALOEX_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    int driver = 0, runtimeVersion = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtimeVersion);
    info["gpu_name"] = prop.name;
    info["gpus_visible"] = cuda::deviceCount();
    info["cuda_driver"] = driver;
    info["cuda_runtime"] = runtimeVersion;
    nlohmann::json ranks = nlohmann::json::array();
    for (const auto& g : gpus) ranks.push_back({{"host", g.host}, {"bus_id", g.busId}, {"device", g.device}});
    info["rank_gpus"] = ranks;
    info["shared_gpus"] = cuda::findSharedGpu(gpus).has_value();
    return info;
}

}  // namespace haloex::jacobi::gpu
