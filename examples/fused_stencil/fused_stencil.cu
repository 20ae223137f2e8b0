// A user's own stencil kernel that does its halo exchange itself, through
// haloex's device halo view: a 2D Jacobi sweep on an nx x ny grid, rows split
// over the ranks (periodic along y, the columns x = 0 and x = nx-1 held
// fixed). Every step is ONE kernel of this program:
//   block 0       waits (timed) for the two neighbours' boundary rows of the
//                 previous step, updates this rank's first and last rows,
//                 stores them straight into the neighbours' receive windows
//                 and signals them with the step-valued generation;
//   other blocks  update the interior rows meanwhile.
// No host synchronisation between steps; this file is compiled without -rdc
// and links no NVSHMEM device library, whatever the backend. At the end the
// field is compared bitwise with the same sweep computed on the host by one
// process.
//
//   mpirun -n 2 fused_stencil [--backend ipc|nvshmem|nccl-device] [--nx N] [--ny N] [--steps N]
//   fused_stencil --threads 2          (ranks as threads of one process; ipc)
// Options: --wait-timeout S (the device wait's limit), --withhold-from G
// (rank 1 stops signalling at generation G: shows the timed wait's report).
// Exit 77 (skipped), with the registry's reason, when no GPU can be used here
// or the backend cannot run in this job (nccl-device: one process per GPU,
// so neither thread ranks nor two processes on one GPU).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/cuda/device_select.hpp"
#include "haloex/halo/backend.hpp"
#include "haloex/halo/device_halo.hpp"
#include "haloex/halo/device_halo_view.cuh"
#include "haloex/runtime/mpi_world.hpp"
#include "haloex/runtime/world.hpp"

namespace {

struct Settings {
    std::string backend = "ipc";
    int threads = 0;  // >0: ranks as threads of this process instead of MPI processes
    int nx = 130;
    int ny = 96;
    int steps = 200;
    double waitTimeout = 0;  // 0: haloex's default
    long long withholdFrom = 0;
};

// The view's links, by name. Rank r receives rank r-1's last row ("from
// below", tag 0) and rank r+1's first row ("from above", tag 1), and sends
// the other way round.
enum : int { kFromBelow = 0, kFromAbove = 1 };  // receive links
enum : int { kToAbove = 0, kToBelow = 1 };      // send links
enum : int { kTagUpwards = 0, kTagDownwards = 1 };

// The initial field, a function of the global cell only (the same on the
// host and on every rank).
__host__ __device__ double initialValue(int x, int y) {
    std::uint32_t h = static_cast<std::uint32_t>(x) * 73856093u ^ static_cast<std::uint32_t>(y) * 19349663u;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    return static_cast<double>(h & 0xffffffu) / 16777216.0;
}

// The stencil, with one order of operations on both sides (explicit rounding
// on the device: no contraction can change a bit).
__device__ double relaxDevice(double left, double right, double down, double up) {
    return __dmul_rn(0.25, __dadd_rn(__dadd_rn(__dadd_rn(left, right), down), up));
}
double relaxHost(double left, double right, double down, double up) { return 0.25 * (((left + right) + down) + up); }

struct StepArgs {
    const double* uOld;  // this rank's rows of the previous step
    double* uNew;
    int nx, rows;
    std::uint64_t generation;    // the generation this step produces (step t: t + 1)
    std::uint64_t withholdFrom;  // >0: from this generation on, do not signal
};

__device__ void signalIfAllowed(const haloex::DeviceHaloView& view, int link, const StepArgs& a) {
    if (a.withholdFrom == 0 || a.generation < a.withholdFrom) haloex::device::signalBlock(view, link, a.generation);
}

// Block 0 of a step: the exchange and the two boundary rows.
__device__ void boundaryRows(const haloex::DeviceHaloView& view, const StepArgs& a) {
    namespace dev = haloex::device;
    const std::uint64_t previous = a.generation - 1;
    if (!dev::waitBlock(view, kFromBelow, previous) || !dev::waitBlock(view, kFromAbove, previous)) return;
    const double* below = dev::recvSlot<double>(view, kFromBelow, previous);  // row -1
    const double* above = dev::recvSlot<double>(view, kFromAbove, previous);  // row `rows`
    const int last = a.rows - 1;
    for (int x = threadIdx.x; x < a.nx; x += blockDim.x) {
        double first = a.uOld[x], final = a.uOld[last * a.nx + x];
        if (x > 0 && x < a.nx - 1) {
            const double upOfFirst = a.rows > 1 ? a.uOld[a.nx + x] : above[x];
            const double downOfLast = a.rows > 1 ? a.uOld[(last - 1) * a.nx + x] : below[x];
            first = relaxDevice(a.uOld[x - 1], a.uOld[x + 1], below[x], upOfFirst);
            final = relaxDevice(a.uOld[last * a.nx + x - 1], a.uOld[last * a.nx + x + 1], downOfLast, above[x]);
        }
        a.uNew[x] = first;
        a.uNew[last * a.nx + x] = final;
        // Straight into the neighbours' halo windows (slot of this generation).
        dev::store(view, kToBelow, a.generation, x, first);
        dev::store(view, kToAbove, a.generation, x, final);
    }
    // Every read of this rank's windows above happened before these signals:
    // a neighbour that sees them may overwrite the slot read here (slots = 2).
    signalIfAllowed(view, kToAbove, a);
    signalIfAllowed(view, kToBelow, a);
}

__global__ void jacobiStep(haloex::DeviceHaloView view, StepArgs a) {
    if (blockIdx.x == 0) {
        boundaryRows(view, a);
        return;
    }
    // Interior rows 1 .. rows-2: local data only, overlapping the exchange.
    const long long interior = static_cast<long long>(a.rows - 2) * a.nx;
    for (long long i = (blockIdx.x - 1) * static_cast<long long>(blockDim.x) + threadIdx.x; i < interior;
         i += static_cast<long long>(gridDim.x - 1) * blockDim.x) {
        const int y = 1 + static_cast<int>(i / a.nx), x = static_cast<int>(i % a.nx);
        const int c = y * a.nx + x;
        a.uNew[c] = x == 0 || x == a.nx - 1
                        ? a.uOld[c]
                        : relaxDevice(a.uOld[c - 1], a.uOld[c + 1], a.uOld[c - a.nx], a.uOld[c + a.nx]);
    }
}

// Generation 1: the initial boundary rows, before the first step.
__global__ void publishInitialRows(haloex::DeviceHaloView view, const double* u, int nx, int rows) {
    for (int x = threadIdx.x; x < nx; x += blockDim.x) {
        haloex::device::store(view, kToBelow, 1, x, u[x]);
        haloex::device::store(view, kToAbove, 1, x, u[(rows - 1) * nx + x]);
    }
    haloex::device::signalBlock(view, kToAbove, 1);
    haloex::device::signalBlock(view, kToBelow, 1);
}

// The same sweep on the whole grid, one process.
std::vector<double> hostReference(const Settings& s) {
    std::vector<double> u(static_cast<std::size_t>(s.nx) * s.ny), next(u.size());
    for (int y = 0; y < s.ny; ++y) {
        for (int x = 0; x < s.nx; ++x) u[static_cast<std::size_t>(y) * s.nx + x] = initialValue(x, y);
    }
    for (int step = 0; step < s.steps; ++step) {
        for (int y = 0; y < s.ny; ++y) {
            const int down = (y + s.ny - 1) % s.ny, up = (y + 1) % s.ny;
            for (int x = 0; x < s.nx; ++x) {
                const std::size_t c = static_cast<std::size_t>(y) * s.nx + x;
                next[c] = x == 0 || x == s.nx - 1
                              ? u[c]
                              : relaxHost(u[c - 1], u[c + 1], u[static_cast<std::size_t>(down) * s.nx + x],
                                          u[static_cast<std::size_t>(up) * s.nx + x]);
            }
        }
        u.swap(next);
    }
    return u;
}

enum class Outcome { Matched, Differs, Skipped };

// One rank's run; every rank returns the same outcome.
Outcome runRank(haloex::runtime::World& world, const Settings& s) {
    const int ranks = world.size(), rank = world.rank();
    if (s.ny % ranks != 0) {
        haloex::throwError(haloex::ErrorKind::InvalidInput, "--ny " + std::to_string(s.ny) +
                                                                " is not divisible by the " + std::to_string(ranks) +
                                                                " ranks (each rank owns ny / ranks whole rows)");
    }
    haloex::cuda::selectDevice(world, /*allowSharedGpus=*/true);
    const haloex::Backend backend = haloex::parseBackend(s.backend);
    // Collective: whether this job can use the backend (e.g. NCCL refuses two
    // ranks on one GPU), asked of the registry instead of compiled in.
    if (const std::string why = haloex::unavailableReason(backend, world); !why.empty()) {
        if (rank == 0) std::printf("SKIPPED: the %s backend cannot run here: %s\n", s.backend.c_str(), why.c_str());
        return Outcome::Skipped;
    }
    const int rows = s.ny / ranks;
    const int below = (rank + ranks - 1) % ranks, above = (rank + 1) % ranks;
    const std::size_t rowBytes = static_cast<std::size_t>(s.nx) * sizeof(double);

    // Allocate first: once the halo exists, a neighbour's kernel may already
    // wait for this rank, and with ranks as threads of one process an
    // allocation that synchronises the device would wait for it in turn.
    const std::size_t cells = static_cast<std::size_t>(rows) * s.nx;
    std::vector<double> field(cells);
    for (int y = 0; y < rows; ++y) {
        for (int x = 0; x < s.nx; ++x) field[static_cast<std::size_t>(y) * s.nx + x] = initialValue(x, rank * rows + y);
    }
    haloex::cuda::DeviceBuffer<double> u[2] = {haloex::cuda::DeviceBuffer<double>(cells),
                                               haloex::cuda::DeviceBuffer<double>(cells)};
    haloex::cuda::Stream stream;
    // Loaded now, for the same reason (lazy loading may synchronise the context).
    haloex::device::loadKernelNow(publishInitialRows);
    haloex::device::loadKernelNow(jacobiStep);
    HALOEX_CUDA_CHECK(
        cudaMemcpyAsync(u[0].data(), field.data(), cells * sizeof(double), cudaMemcpyHostToDevice, stream.get()));
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream.get()));

    haloex::DeviceHaloOptions options;
    options.waitTimeoutSeconds = s.waitTimeout;
    options.abortJobOnTimeout = world.kind() == "mpi";  // threads: reported through throwIfTimedOut
    options.what = "the fused stencil's halo";
    haloex::DeviceHalo halo(world, backend, {{below, kTagUpwards, rowBytes, 2}, {above, kTagDownwards, rowBytes, 2}},
                            {{above, kTagUpwards}, {below, kTagDownwards}}, options);
    const haloex::DeviceHaloView view = halo.view();
    if (rank == 0) {
        for (const std::string& line : halo.describe()) std::printf("[rank 0] %s\n", line.c_str());
    }

    constexpr int kThreads = 256;
    const long long interiorCells = static_cast<long long>(rows > 2 ? rows - 2 : 0) * s.nx;
    const int blocks = 1 + static_cast<int>(std::min<long long>(64, (interiorCells + kThreads - 1) / kThreads));
    const std::uint64_t withhold = rank == 1 ? static_cast<std::uint64_t>(s.withholdFrom) : 0;
    publishInitialRows<<<1, kThreads, 0, stream.get()>>>(view, u[0].data(), s.nx, rows);
    HALOEX_CUDA_CHECK_LAUNCH();
    for (int t = 1; t <= s.steps; ++t) {
        const StepArgs args{
            u[(t - 1) & 1].data(), u[t & 1].data(), s.nx, rows, static_cast<std::uint64_t>(t) + 1, withhold};
        jacobiStep<<<blocks, kThreads, 0, stream.get()>>>(view, args);
        HALOEX_CUDA_CHECK_LAUNCH();
    }
    HALOEX_CUDA_CHECK(cudaMemcpyAsync(field.data(), u[s.steps & 1].data(), cells * sizeof(double),
                                      cudaMemcpyDeviceToHost, stream.get()));
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    halo.throwIfTimedOut();

    // Rank order is row order: gather the field and compare it bit for bit.
    std::vector<double> whole(static_cast<std::size_t>(s.nx) * s.ny);
    world.allGatherBytes(std::as_bytes(std::span(field)), std::as_writable_bytes(std::span(whole)));
    const std::vector<double> reference = hostReference(s);
    std::size_t mismatches = 0, first = 0;
    for (std::size_t i = whole.size(); i-- > 0;) {
        if (std::memcmp(&whole[i], &reference[i], sizeof(double)) != 0) {
            ++mismatches;
            first = i;
        }
    }
    if (rank == 0) {
        if (mismatches == 0) {
            std::printf("fused stencil matches the host reference bitwise (%d x %d cells, %d steps, %d ranks, %s)\n",
                        s.nx, s.ny, s.steps, ranks, s.backend.c_str());
        } else {
            std::printf("fused stencil differs from the host reference in %zu of %zu cells; first at x=%zu y=%zu: "
                        "%.17g instead of %.17g\n",
                        mismatches, whole.size(), first % s.nx, first / s.nx, whole[first], reference[first]);
        }
    }
    return mismatches == 0 ? Outcome::Matched : Outcome::Differs;
}

Settings parse(int argc, char** argv) {
    Settings s;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) haloex::throwError(haloex::ErrorKind::InvalidInput, arg + " needs a value");
            return argv[++i];
        };
        auto number = [&](long long low) {
            const std::string text = value();
            char* end = nullptr;
            const long long v = std::strtoll(text.c_str(), &end, 10);
            if (end == text.c_str() || *end != '\0' || v < low) {
                haloex::throwError(haloex::ErrorKind::InvalidInput,
                                   arg + " " + text + ": use a whole number of at least " + std::to_string(low));
            }
            return v;
        };
        if (arg == "--backend") s.backend = value();
        else if (arg == "--threads") s.threads = static_cast<int>(number(1));
        else if (arg == "--nx") s.nx = static_cast<int>(number(3));
        else if (arg == "--ny") s.ny = static_cast<int>(number(1));
        else if (arg == "--steps") s.steps = static_cast<int>(number(1));
        else if (arg == "--wait-timeout") s.waitTimeout = std::atof(value().c_str());
        else if (arg == "--withhold-from") s.withholdFrom = number(2);
        else haloex::throwError(haloex::ErrorKind::InvalidInput, "unknown option " + arg + " (see the file's head)");
    }
    return s;
}

}  // namespace

int main(int argc, char** argv) try {
    const Settings settings = parse(argc, argv);
    // Ranks as threads: their streams share one context, and a stream that
    // shares a hardware work queue with another queues behind it, so a rank's
    // kernel can wait for ever behind a neighbour's kernel that waits for it
    // (seen under MPS, whose clients get fewer queues by default: every run of
    // 4 thread ranks timed out, none with 32). Before the first CUDA call.
    if (settings.threads > 0) setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", /*overwrite=*/0);
    if (const std::string why = haloex::deviceUnavailableReason(); !why.empty()) {
        std::printf("SKIPPED: the fused stencil needs a GPU: %s\n", why.c_str());
        return 77;
    }
    Outcome outcome = Outcome::Matched;
    if (settings.threads > 0) {
        haloex::runtime::runInProcess(settings.threads, [&](haloex::runtime::World& world) {
            const Outcome mine = runRank(world, settings);
            if (world.rank() == 0) outcome = mine;
        });
    } else {
        haloex::runtime::MpiSession session(argc, argv);
        haloex::runtime::MpiWorld world;
        outcome = runRank(world, settings);
    }
    return outcome == Outcome::Matched ? 0 : outcome == Outcome::Skipped ? 77 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "fused_stencil: error: %s\n", e.what());
    return 1;
}
