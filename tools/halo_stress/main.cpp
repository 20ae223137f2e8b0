// haloex-halo-stress: the acceptance test for a transport's ordering. Runs
// thousands of forward/reverse exchanges back to back (no host
// synchronisation between steps) and checks on the device, every step, every
// received coordinate and every accumulated force against closed-form values
// that the reference algorithm implies; repartitions the atoms every
// --repartition-every steps. Launch with mpirun; exits 77 (skipped) without a
// GPU or when the transport cannot run here (e.g. NCCL with shared GPUs), 2 on
// bad options (checked before MPI and the GPU).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <deque>
#include <optional>
#include <random>
#include <vector>

#include "haloex/build_info.hpp"
#include "haloex/detail/cuda/blocking_ops.hpp"
#include "haloex/core/error.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/cuda/device_select.hpp"
#include "haloex/halo/backend.hpp"
#include "haloex/halo/collective_buffer.hpp"
#include "haloex/halo/coordinate_force_halo.hpp"
#include "haloex/plan/decomposition.hpp"
#include "haloex/runtime/mpi_world.hpp"
#include "haloex/runtime/plan_exchange.hpp"
#include "haloex/transport/registry.hpp"
#include "haloex/detail/transport/host_exchange.hpp"
#include "stress_kernels.hpp"

namespace {

using namespace haloex;
constexpr int kBadInput = 2;
constexpr int kSkipped = 77;

struct Options {
    std::string transport = "nvshmem";
    std::string nvshmemPath = "auto";
    std::string nvshmemLaunch = "fused";
    std::string grid = "2x1x1";
    int atoms = 4000;
    double density = 100.0;
    double rlist = 1.0;
    long long steps = 2000;
    int repartitionEvery = 250;
    int checkEvery = 100;
    bool allowSharedGpus = false;
    double waitTimeout = 0.0;
    unsigned seed = 7;
    int timeExchanges = 0;
    bool cudaGraph = false;
};

// The nvshmem settings a result line names: "path direct", and the launch
// where it is not the fused default ("path direct, launch per-pulse";
// bench/exchange_timing.py reads both).
std::string variantName(const Options& o) {
    if (o.nvshmemLaunch == "fused") return fmt::format("path {}", o.nvshmemPath);
    return fmt::format("path {}, launch {}", o.nvshmemPath, o.nvshmemLaunch);
}

// Every option in range, before MPI or a GPU is touched (a zero --check-every
// divided by zero, a zero --repartition-every never advanced).
void validate(const Options& o) {
    const auto refuse = [](const std::string& what) { throwError(ErrorKind::InvalidInput, what); };
    if (o.atoms < 1 || o.atoms > 100'000'000) refuse(fmt::format("--atoms {}: use 1 to 100000000 atoms", o.atoms));
    if (!std::isfinite(o.rlist) || o.rlist <= 0.0) {
        refuse(fmt::format("--rlist {}: use a halo distance in nm above 0", o.rlist));
    }
    if (o.steps < 1) refuse(fmt::format("--steps {}: use at least one step", o.steps));
    if (o.repartitionEvery < 1) {
        refuse(fmt::format("--repartition-every {}: use a positive number of steps", o.repartitionEvery));
    }
    if (o.checkEvery < 1) refuse(fmt::format("--check-every {}: use a positive number of steps", o.checkEvery));
    if (!std::isfinite(o.waitTimeout) || o.waitTimeout < 0.0) {
        refuse(fmt::format("--wait-timeout {}: use 0 (default) or a number of seconds", o.waitTimeout));
    }
    if (o.nvshmemLaunch != "fused" && o.nvshmemLaunch != "per-pulse") {
        refuse(fmt::format("--nvshmem-launch {}: use fused or per-pulse", o.nvshmemLaunch));
    }
    plan::parseRankGrid(o.grid);
    if (o.transport == "auto") {
        std::vector<std::string_view> names;
        for (Backend b : knownBackends()) names.push_back(toString(b));
        refuse(fmt::format("--transport {}: the stress test checks one particle transport; name it ({})", o.transport,
                           fmt::join(names, ", ")));
    }
    parseBackend(o.transport);  // an unknown name is refused with the known ones
}

// What a halo copy carries, forwarded through the plan at repartitioning.
struct CopyTag {
    std::int64_t globalId;
    std::int32_t image[3];
    std::int32_t unused;
};

struct Epoch {
    runtime::RankPlan plan;
    std::vector<stress::SlotInfo> slots;
    std::vector<Vec3f> homeBase;
};

Epoch buildEpoch(const plan::Decomposition& dd, const std::vector<Vec3f>& base, runtime::World& world) {
    std::vector<Vec3d> positions(base.size());
    for (std::size_t i = 0; i < base.size(); ++i) positions[i] = static_cast<Vec3d>(base[i]);
    const auto owners = plan::partitionAtoms(dd, positions);
    const auto& mine = owners[world.rank()];
    Epoch e;
    std::vector<Vec3d> home;
    for (int g : mine) {
        home.push_back(positions[g]);
        e.homeBase.push_back(base[g]);
    }
    e.plan = runtime::buildParticlePlan(dd, home, world, /*alignment=*/4);
    const auto& p = e.plan.plan;
    std::vector<CopyTag> tags(p.numLocal, CopyTag{-1, {0, 0, 0}, 0});
    for (std::size_t i = 0; i < mine.size(); ++i) tags[i].globalId = mine[i];
    transport::forwardPulses(world, p.pulses, std::span<CopyTag>(tags), [](const plan::Pulse& pulse, CopyTag t) {
        t.image[pulse.dim] += pulse.shiftSign;
        return t;
    });
    std::vector<std::int32_t> copies(p.numLocal, 0);
    for (int i = p.numHome; i < p.numLocal; ++i) copies[i] = p.receivedInPulse[i] >= 0 ? 1 : 0;
    transport::reversePulses(world, p.pulses, std::span<std::int32_t>(copies));
    e.slots.resize(p.numLocal);
    for (int i = 0; i < p.numLocal; ++i) {
        stress::SlotInfo& s = e.slots[i];
        const bool real = i < p.numHome || p.receivedInPulse[i] >= 0;
        s.globalId = real ? tags[i].globalId : -1;
        for (int d = 0; d < 3; ++d) {
            // Exactly what the transports add: the double product rounded once.
            s.shift[d] = tags[i].image[d] != 0 ? static_cast<float>(tags[i].image[d] * dd.box().length[d]) : 0.f;
        }
        s.copies = i < p.numHome ? copies[i] : 0;
    }
    return e;
}

void timeExchanges(const Options& o, CoordinateForceHalo& halo, const plan::Box& box, runtime::World& world,
                   const cuda::Stream& stream);

// One checked step captured in a CUDA graph (--cuda-graph), for one epoch.
struct StepGraph {
    cudaGraphExec_t exec = nullptr;
    StepGraph() = default;
    StepGraph(const StepGraph&) = delete;
    StepGraph& operator=(const StepGraph&) = delete;
    ~StepGraph() {
        if (exec != nullptr) cudaGraphExecDestroy(exec);
    }
    template <class Enqueue>
    void capture(const cuda::Stream& stream, Enqueue enqueue) {
        cudaGraph_t graph = nullptr;
        HALOEX_CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
        enqueue();
        HALOEX_CUDA_CHECK(cudaStreamEndCapture(stream.get(), &graph));
        HALOEX_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
        HALOEX_CUDA_CHECK(cudaGraphDestroy(graph));
    }
};

int runStress(const Options& o, runtime::MpiWorld& world) {
    if (cuda::deviceCount() == 0) {
        if (world.rank() == 0) fmt::print("SKIPPED: no GPU is visible, the stress test needs one\n");
        return kSkipped;
    }
    cuda::selectDevice(world, o.allowSharedGpus);
    transport::TransportOptions topts;
    topts.memorySpace = transport::MemorySpace::Device;
    topts.allowSharedGpus = o.allowSharedGpus;
    topts.nvshmemPath = o.nvshmemPath;
    topts.nvshmemLaunch = o.nvshmemLaunch;
    topts.waitTimeoutSeconds = o.waitTimeout;
    // Through the registry: a backend this build or this job cannot run
    // (NCCL with shared GPUs, a build without NVSHMEM) skips with the reason
    // every rank agreed on; anything that fails after that is an error.
    const Backend backend = parseBackend(o.transport);
    if (const std::string why = unavailableReason(backend, world); !why.empty()) {
        if (world.rank() == 0) fmt::print("SKIPPED: {}: {}\n", o.transport, why);
        return kSkipped;
    }
    const std::unique_ptr<transport::BlockTransport> transport = makeTransport(backend, world, topts);

    const double side = std::cbrt(o.atoms / o.density);
    plan::DecompositionSpec spec{plan::Box{{side, side, side}}, plan::parseRankGrid(o.grid), 0.9, o.rlist};
    const plan::Decomposition dd(spec);
    plan::requireGridMatchesRanks(dd.grid(), world.size());

    cuda::Stream stream;
    cuda::DeviceBuffer<stress::SlotInfo> dSlots;
    cuda::DeviceBuffer<Vec3f> dHomeBase, dBaseById;
    cuda::DeviceBuffer<stress::StepCheck> dCheck(1);
    cuda::DeviceBuffer<long long> dStep(1);
    long long replays = 0;
    cuda::fillBytesNow(dCheck.data(), 0, sizeof(stress::StepCheck));
    std::mt19937_64 rng(o.seed);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);

    // The exchange of an MD step on arrays this program owns.
    CoordinateForceHalo halo(*transport);
    std::optional<CollectiveBuffer<Vec3f>> x, f;
    const auto start = std::chrono::steady_clock::now();
    long long step = 0;
    int epochs = 0;
    stress::StepCheck total{};
    while (step < o.steps) {
        // New random positions (same on every rank), new partition and plan.
        std::vector<Vec3f> base(o.atoms);
        for (auto& b : base) {
            for (int d = 0; d < 3; ++d) b[d] = static_cast<float>(uniform(rng) * side * 0.999);
        }
        const Epoch e = buildEpoch(dd, base, world);
        const auto& p = e.plan.plan;
        if (!x) {
            x.emplace(allocateCollective<Vec3f>(world, *transport, p.numLocal, "coordinates"));
            f.emplace(allocateCollective<Vec3f>(world, *transport, p.numLocal, "forces"));
        }
        x->resize(p.numLocal);
        f->resize(p.numLocal);
        halo.setPlan(p, *x, *f);
        ++epochs;
        dSlots.resize(std::max(1, p.numLocal));
        dHomeBase.resize(std::max<std::size_t>(1, e.homeBase.size()));
        dBaseById.resize(base.size());
        cuda::copyToDeviceNow(dSlots.data(), e.slots.data(), e.slots.size() * sizeof(stress::SlotInfo));
        cuda::copyToDeviceNow(dHomeBase.data(), e.homeBase.data(), e.homeBase.size() * sizeof(Vec3f));
        cuda::copyToDeviceNow(dBaseById.data(), base.data(), base.size() * sizeof(Vec3f));
        const long long epochStart = step;
        const long long epochEnd = std::min<long long>(o.steps, step + o.repartitionEvery);
        if (o.cudaGraph && !halo.graphCapturable()) {
            if (world.rank() == 0) {
                fmt::print(stderr, "haloex-halo-stress: error: --cuda-graph: {} cannot be captured in a CUDA graph\n",
                           o.transport);
            }
            return kBadInput;
        }
        cuda::copyToDeviceNow(dStep.data(), &step, sizeof step);
        // One checked step, enqueued on `stream`; it ends by advancing the step on the device.
        const auto enqueueStep = [&] {
            stress::setHomePositions(x->data(), dHomeBase.data(), dSlots.data(), p.numHome, dStep.data(), stream);
            halo.clearForces(stream.get());
            halo.gatherCoordinates(dd.box(), stream.get());
            stress::checkHaloAndFillForces(x->data(), f->data(), dBaseById.data(), dSlots.data(), p.numHome, p.numLocal,
                                           dStep.data(), dCheck.data(), stream);
            halo.scatterAddForces(stream.get());
            stress::checkForces(f->data(), dSlots.data(), p.numHome, dStep.data(), dCheck.data(), stream);
            stress::advanceStep(dStep.data(), stream);
        };
        StepGraph graph;
        for (; step < epochEnd; ++step) {
            // --cuda-graph: the epoch's first step runs uncaptured (nccl needs
            // one pair after setPlan), the next is captured and every later
            // one replays that graph, each on the device's next step.
            if (o.cudaGraph && step > epochStart && graph.exec == nullptr) graph.capture(stream, enqueueStep);
            if (graph.exec != nullptr) {
                HALOEX_CUDA_CHECK(cudaGraphLaunch(graph.exec, stream.get()));
                ++replays;
            } else {
                enqueueStep();
            }
            if ((step + 1) % o.checkEvery == 0 || step + 1 == epochEnd) {
                HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
                halo.transport().checkForFailure();
                HALOEX_CUDA_CHECK(cudaMemcpy(&total, dCheck.data(), sizeof total, cudaMemcpyDeviceToHost));
                std::vector<std::int64_t> errors{static_cast<std::int64_t>(total.coordinateErrors),
                                                 static_cast<std::int64_t>(total.forceErrors),
                                                 static_cast<std::int64_t>(total.haloForceNotCleared)};
                world.allReduce(std::span<std::int64_t>(errors.data(), errors.size()), runtime::ReduceOp::Sum);
                if (errors[0] + errors[1] + errors[2] > 0) {
                    fmt::print(stderr,
                               "rank {}: step {}: {} coordinate errors, {} force errors, {} uncleared halo forces "
                               "(first on this rank: slot {} at step {})\n",
                               world.rank(), step, total.coordinateErrors, total.forceErrors, total.haloForceNotCleared,
                               total.firstBadSlot, total.firstBadStep);
                    world.barrier();
                    if (world.rank() == 0) {
                        fmt::print("FAILED: {} {} on {} after {} steps: {} coordinate, {} force, {} clearing errors\n",
                                   o.transport, variantName(o), o.grid, step + 1, errors[0], errors[1], errors[2]);
                    }
                    return 1;
                }
            }
        }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (o.timeExchanges > 0) timeExchanges(o, halo, dd.box(), world, stream);
    if (world.rank() == 0) {
        for (const auto& line : halo.describe()) fmt::print("  {}\n", line);
        fmt::print("PASSED: {} ({}) on {} ranks, grid {}, {} atoms: {} steps ({} replayed from a CUDA graph), {} "
                   "repartitionings, every halo coordinate and accumulated force checked each step ({:.1f} s)\n",
                   o.transport, variantName(o), world.size(), o.grid, o.atoms, o.steps, replays, epochs, seconds);
    }
    return 0;
}

// Device time of each forward and reverse exchange alone (CUDA events around
// each call, back to back, no check kernels): pack, transfer, signal and the
// wait for this rank's own halo. Medians and 10th/90th percentiles; the
// slowest rank is printed (the ranks wait for each other).
//
// Two ways: launched from the host one call at a time ("stream": includes
// whatever launch latency the host cannot hide), and, where the transport can
// be captured, replayed from a CUDA graph of kGraphPairs exchanges ("graph":
// the device's own time, as in an MD step graph).
struct ExchangeTimes {
    std::vector<double> forward, reverse;
};

double quantile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

// halo == nullptr: an empty kernel in place of each exchange (the launch and
// event cost every timing below includes).
void enqueuePairs(CoordinateForceHalo* halo, const plan::Box& box, std::deque<cuda::Event>& marks, int pairs,
                  cudaStream_t stream) {
    for (int i = 0; i < pairs; ++i) {
        marks[3 * i].recordTimestamp(stream);
        if (halo) {
            halo->gatherCoordinates(box, stream);
        } else {
            stress::launchEmptyKernel(stream);
        }
        marks[3 * i + 1].recordTimestamp(stream);
        if (halo) {
            halo->scatterAddForces(stream);
        } else {
            stress::launchEmptyKernel(stream);
        }
        marks[3 * i + 2].recordTimestamp(stream);
    }
}

void collect(const std::deque<cuda::Event>& marks, int pairs, ExchangeTimes& times) {
    for (int i = 0; i < pairs; ++i) {
        float ms = 0.f;
        HALOEX_CUDA_CHECK(cudaEventElapsedTime(&ms, marks[3 * i].get(), marks[3 * i + 1].get()));
        times.forward.push_back(1e3 * ms);
        HALOEX_CUDA_CHECK(cudaEventElapsedTime(&ms, marks[3 * i + 1].get(), marks[3 * i + 2].get()));
        times.reverse.push_back(1e3 * ms);
    }
}

ExchangeTimes timeFromStream(CoordinateForceHalo& halo, const plan::Box& box, int n, const cuda::Stream& stream) {
    std::deque<cuda::Event> marks;  // events cannot move
    for (int i = 0; i < 3 * n; ++i) marks.emplace_back(true);
    enqueuePairs(&halo, box, marks, n, stream.get());
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    halo.transport().checkForFailure();
    ExchangeTimes times;
    collect(marks, n, times);
    return times;
}

ExchangeTimes timeFromGraph(CoordinateForceHalo* halo, const plan::Box& box, int n, const cuda::Stream& stream) {
    constexpr int kGraphPairs = 50;
    std::deque<cuda::Event> marks;
    for (int i = 0; i < 3 * kGraphPairs; ++i) marks.emplace_back(true);
    cudaGraph_t graph = nullptr;
    HALOEX_CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
    enqueuePairs(halo, box, marks, kGraphPairs, stream.get());
    HALOEX_CUDA_CHECK(cudaStreamEndCapture(stream.get(), &graph));
    cudaGraphExec_t exec = nullptr;
    HALOEX_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    HALOEX_CUDA_CHECK(cudaGraphDestroy(graph));
    ExchangeTimes times;
    for (int launched = 0; launched < std::max(2, n / kGraphPairs); ++launched) {
        HALOEX_CUDA_CHECK(cudaGraphLaunch(exec, stream.get()));
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
        if (halo) halo->transport().checkForFailure();
        if (launched > 0) collect(marks, kGraphPairs, times);  // the first launch warms up
    }
    HALOEX_CUDA_CHECK(cudaGraphExecDestroy(exec));
    return times;
}

void printTimes(const Options& o, const char* how, const ExchangeTimes& t, const CoordinateForceHalo& halo,
                runtime::World& world) {
    std::vector<double> stats{quantile(t.forward, 0.5), quantile(t.forward, 0.1), quantile(t.forward, 0.9),
                              quantile(t.reverse, 0.5), quantile(t.reverse, 0.1), quantile(t.reverse, 0.9)};
    world.allReduce(std::span<double>(stats.data(), stats.size()), runtime::ReduceOp::Max);
    const auto& plan = halo.plan();
    std::int64_t haloAtoms = plan.numLocal - plan.numHome;
    std::vector<std::int64_t> sizes{haloAtoms, static_cast<std::int64_t>(plan.pulses.size())};
    world.allReduce(std::span<std::int64_t>(sizes.data(), sizes.size()), runtime::ReduceOp::Max);
    if (world.rank() == 0) {
        fmt::print("TIMING ({}): {} ({}) {} atoms on {} ranks, grid {}, {} pulse(s), up to {} halo atoms ({} "
                   "bytes of coordinates) per rank, {} exchanges: forward {:.2f} us (p10 {:.2f}, p90 {:.2f}), "
                   "reverse {:.2f} us (p10 {:.2f}, p90 {:.2f}); slowest rank\n",
                   how, o.transport, variantName(o), o.atoms, world.size(), o.grid, sizes[1], sizes[0],
                   sizes[0] * static_cast<std::int64_t>(sizeof(Vec3f)), t.forward.size(), stats[0], stats[1], stats[2],
                   stats[3], stats[4], stats[5]);
    }
}

void timeExchanges(const Options& o, CoordinateForceHalo& halo, const plan::Box& box, runtime::World& world,
                   const cuda::Stream& stream) {
    for (int warm = 0; warm < 20; ++warm) {
        halo.gatherCoordinates(box, stream.get());
        halo.scatterAddForces(stream.get());
    }
    printTimes(o, "stream", timeFromStream(halo, box, o.timeExchanges, stream), halo, world);
    if (halo.graphCapturable()) {
        printTimes(o, "graph", timeFromGraph(&halo, box, o.timeExchanges, stream), halo, world);
        printTimes(o, "graph, empty kernel instead of each exchange",
                   timeFromGraph(nullptr, box, o.timeExchanges, stream), halo, world);
    } else if (world.rank() == 0) {
        fmt::print("TIMING (graph): skipped, {} cannot be captured in a CUDA graph\n", o.transport);
    }
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    CLI::App app{"haloex-halo-stress: checks a halo transport's ordering under load against the reference "
                 "algorithm (launch with mpirun; exit code 77 means skipped)"};
    app.set_version_flag(
        "--version", [] { return haloex::buildDescription("haloex-halo-stress"); },
        "Print the version and the build (commit, CUDA with its GPU architectures, MPI, NCCL, NVSHMEM) and exit");
    app.add_option("--transport", o.transport, "staged, ipc, nccl or nvshmem")->capture_default_str();
    app.add_option("--nvshmem-path", o.nvshmemPath, "auto, direct, tma or put")->capture_default_str();
    app.add_option("--nvshmem-launch", o.nvshmemLaunch,
                   "fused (one kernel per exchange) or per-pulse (one launch per pulse, the ablation)")
        ->capture_default_str();
    app.add_option("--grid", o.grid, "Rank grid NXxNYxNZ")->capture_default_str();
    app.add_option("--atoms", o.atoms, "Atoms (random positions, redrawn at every repartitioning)")
        ->capture_default_str();
    app.add_option("--rlist", o.rlist, "Halo distance (nm)")->capture_default_str();
    app.add_option("--steps", o.steps, "Exchanges (forward + reverse) to run")->capture_default_str();
    app.add_option("--repartition-every", o.repartitionEvery, "Steps between repartitionings")->capture_default_str();
    app.add_option("--check-every", o.checkEvery, "Steps between reading the device-side error counters")
        ->capture_default_str();
    app.add_flag("--allow-shared-gpus", o.allowSharedGpus, "Allow several ranks per GPU (start MPS)");
    app.add_option("--wait-timeout", o.waitTimeout, "nvshmem: device-side wait limit in seconds (0: default)");
    app.add_option("--seed", o.seed, "Random seed")->capture_default_str();
    app.add_option("--time-exchanges", o.timeExchanges,
                   "After the checked steps, time this many forward/reverse exchanges alone (0: none)")
        ->check(CLI::Range(0, 100000));
    app.add_flag("--cuda-graph", o.cudaGraph,
                 "Capture one checked step in a CUDA graph after each repartitioning's first step and replay it for "
                 "the others, as the MD step does (a transport that cannot be captured is refused)");
    CLI11_PARSE(app, argc, argv);
    try {
        validate(o);
    } catch (const Error& e) {
        fmt::print(stderr, "haloex-halo-stress: error: {}\n", e.what());
        return kBadInput;
    }

    runtime::MpiSession session(argc, argv);
    runtime::MpiWorld world;
    try {
        return runStress(o, world);
    } catch (const std::exception& e) {
        world.abort(fmt::format("haloex-halo-stress: {}", e.what()));
    }
}
