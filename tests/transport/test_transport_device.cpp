// Every device transport this build has (the factory's list: staged in
// device memory, ipc, nccl, and nvshmem on each of its paths direct, tma,
// put) reproduces the in-process reference bitwise: forwarded coordinates
// (with periodic shifts), typed per-atom fields, and reverse-accumulated
// forces (each pulse unpacks after the later pulses, so even the atomic adds
// happen in the reference's order). Ranks are threads of this process, or MPI
// ranks when the suite is launched by mpirun (ctest's *_np2/_np4/_np8
// variants, through mpi_gpu_launch: one rank per GPU, or ranks sharing a GPU
// under MPS). nvshmem has one PE per process: it runs in the MPI variants only.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <thread>

#include "haloex/config.hpp"
#include "haloex/core/error.hpp"
#include "haloex/halo/backend.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/transport/registry.hpp"
#include "device_test_ranks.hpp"
#include "transport_check.hpp"

#if HALOEX_HAVE_CUDA
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/cuda/device_select.hpp"
#include "peer_fused_transport.hpp"
#endif
#if HALOEX_TEST_HOME_STORES
#include "home_stores_kernel.hpp"
#endif

using namespace haloex;

namespace {

using testsupport::mpiWorld;
using testsupport::noGpuReason;

// The MPI job's world when launched by mpirun, else null (thread ranks).
#if HALOEX_HAVE_CUDA
testsupport::MemoryOps deviceMemory(cudaStream_t stream) {
    testsupport::MemoryOps m;
    m.stream = stream;
    m.allocate = [](std::size_t bytes) {
        void* p = nullptr;
        HALOEX_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)));
        return p;
    };
    m.release = [](void* p) { cudaFree(p); };
    // On the transport's stream: it is non-blocking, so a plain cudaMemcpy (legacy
    // stream) would not be ordered with the transport's work.
    m.copy = [stream](void* dst, const void* src, std::size_t bytes) {
        if (!bytes) return;
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    };
    m.synchronize = [stream] { HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream)); };
    return m;
}
#endif

// One instance of the suite: a transport, and for nvshmem the path forced
// and how the exchange is launched (fused, or the per-pulse ablation).
struct DeviceCase {
    std::string transport;
    std::string nvshmemPath = "auto";
    std::string nvshmemLaunch = "fused";
    bool blockSignals = false;  // HALOEX_EXCHANGE_SIGNALS=block (the fused kernels' signals per block)
    std::string label() const {
        std::string out = nvshmemPath == "auto" ? transport : transport + "_" + nvshmemPath;
        if (nvshmemLaunch != "fused") out += "_perpulse";
        return blockSignals ? out + "_blocksignals" : out;
    }
    // nvshmem's force kernel adds every pulse into the owners with atomics,
    // concurrently: forces within float tolerance, not bitwise (the halo
    // coordinates and fields stay bitwise).
    double forceTolerance() const { return transport == "nvshmem" || transport == "peer_fused_ipc" ? 1e-6 : 0.0; }
};
void PrintTo(const DeviceCase& c, std::ostream* os) { *os << c.label(); }

// From the registry, so a transport added to the build is tested without a
// line here. "reference" is the host-memory oracle the others are checked
// against; nccl-device is checked as peer_fused_ipc (its code over CUDA IPC,
// which ranks sharing a GPU can run; NCCL refuses them).
std::vector<DeviceCase> deviceCases() {
    std::vector<DeviceCase> cases;
    for (Backend backend : availableBackends()) {
        if (backend == Backend::Reference || backend == Backend::NcclDevice) continue;
        const std::string name(toString(backend));
        if (name == "nvshmem") {
            for (const char* path : {"direct", "tma", "put"}) cases.push_back({name, path});
            for (const char* path : {"direct", "tma", "put"}) cases.push_back({name, path, "per-pulse"});
            // Signals per block (the put path keeps its one per pulse: checked that it still works).
            for (const char* path : {"direct", "tma", "put"}) cases.push_back({name, path, "fused", true});
            cases.push_back({name, "direct", "per-pulse", true});
        } else {
            cases.push_back({name});
        }
    }
    cases.push_back({"peer_fused_ipc"});
    cases.push_back({"peer_fused_ipc", "auto", "fused", true});
    return cases;
}

// The fused transport of the nccl-device backend over CUDA IPC peer memory
// instead of NCCL's windows: the same code, runnable with ranks sharing one
// GPU (NCCL refuses them), so one GPU checks it.
constexpr const char* kPeerFusedIpc = "peer_fused_ipc";
bool fusedKernels(const DeviceCase& c) { return c.transport == "nvshmem" || c.transport == kPeerFusedIpc; }

// Why this case cannot run in this process, or empty.
std::string cannotRunHere(const DeviceCase& c) {
    if (std::string why = noGpuReason(); !why.empty()) return why;
    if (c.transport == kPeerFusedIpc) {
        if (std::string why = unavailableReason(Backend::Ipc); !why.empty()) return why;
    } else if (std::string why = unavailableReason(parseBackend(c.transport)); !why.empty()) {
        return why;
    }
    if (fusedKernels(c) && !mpiWorld()) {
        return c.transport + " needs one process per rank: it runs in the MPI variants (ctest -R "
                             "test_transport_device_np)";
    }
    return {};
}

// The fused kernels' bulk copies need receive slots aligned to 4 atoms; the
// others keep the unaligned plans they were written for.
int planAlignment(const DeviceCase& c) { return fusedKernels(c) ? 4 : 1; }

transport::TransportOptions deviceOptions(const DeviceCase& c) {
    transport::TransportOptions options;
    options.memorySpace = transport::MemorySpace::Device;
    options.allowSharedGpus = true;
    options.nvshmemPath = c.nvshmemPath;
    options.nvshmemLaunch = c.nvshmemLaunch;
    return options;
}

std::unique_ptr<transport::BlockTransport> makeFor(const DeviceCase& c, runtime::World& world) {
    // Read by the fused transports at every plan: set for the whole case, on every rank alike.
    if (c.blockSignals) {
        ::setenv("HALOEX_EXCHANGE_SIGNALS", "block", 1);
    } else {
        ::unsetenv("HALOEX_EXCHANGE_SIGNALS");
    }
#if HALOEX_HAVE_CUDA
    if (c.transport == kPeerFusedIpc) {
        const auto ipcWindows = [](runtime::World& w, std::size_t bytes, const std::string& what) {
            return transport::allocatePeerMemory(Backend::Ipc, w, bytes, what);
        };
        return transport::makePeerFusedTransport(world, deviceOptions(c), transport::ArrayMemory::IpcWindow, ipcWindows,
                                                 kPeerFusedIpc);
    }
#endif
    return transport::makeTransport(parseBackend(c.transport), world, deviceOptions(c));
}

struct RankOutcome {
    std::string mismatch;
    transport::TransportCounters counters;
    std::int64_t pulses = 0;
};

constexpr int kSteps = 2;

// One rank: pick its GPU, make the transport, run kSteps rounds, compare.
RankOutcome runRank(runtime::World& world, const DeviceCase& c, const plan::Box& box,
                    const testsupport::Expected& expected) {
    RankOutcome outcome;
#if HALOEX_HAVE_CUDA
    cuda::selectDevice(world, /*allowSharedGpus=*/true);
    cuda::Stream stream;
    const testsupport::MemoryOps memory = deviceMemory(stream);
    auto t = makeFor(c, world);
    if (t->name() != c.transport) outcome.mismatch = "the factory made '" + t->name() + "'";
    if (t->memorySpace() != transport::MemorySpace::Device) outcome.mismatch += "not in device memory; ";
    const auto r = static_cast<std::size_t>(world.rank());
    const auto result = testsupport::runTransport(*t, world, expected.plans[r], expected.inputs[r], box, memory, kSteps,
                                                  [&world] { world.barrier(); });
    // What the transport chose is known once it has a plan.
    if (t->describe().empty()) outcome.mismatch += "describe() is empty after a plan was bound; ";
    if (c.transport == "nvshmem" && !t->describe().empty() &&
        t->describe().front().find("launch " + c.nvshmemLaunch + " ") == std::string::npos) {
        outcome.mismatch += "describe() does not name the launch '" + c.nvshmemLaunch + "'; ";
    }
    // The fused transports say how the coordinates are signalled (put: per pulse whatever was asked).
    if (fusedKernels(c) && !t->describe().empty() && !expected.plans[r].pulses.empty()) {
        const bool perBlock = t->describe().front().find("signalled per sending block") != std::string::npos;
        if (perBlock != (c.blockSignals && c.nvshmemPath != "put")) {
            outcome.mismatch += "describe() names the wrong signals: " + t->describe().front() + "; ";
        }
    }
    outcome.mismatch += testsupport::compareResults(result, expected.outputs[r], world.rank(),
                                                    expected.plans[r].zoneMask, c.forceTolerance());
    outcome.counters = result.counters;
    outcome.pulses = static_cast<std::int64_t>(expected.plans[r].pulses.size());
#else
    (void)world, (void)c, (void)box, (void)expected;
#endif
    return outcome;
}

bool isSharedGpuRefusal(const Error& e) {
    return e.kind() == ErrorKind::Nccl &&
           std::string(e.what()).find("refuses two ranks on one GPU") != std::string::npos;
}

// Host syncs per pulse and direction that each transport promises.
std::int64_t syncsPerPulseAndDirection(const std::string& name) {
    if (name == "staged") return 1;
    if (name == "ipc") return 2;
    return 0;  // nccl: stream-ordered
}

class DeviceTransport : public ::testing::TestWithParam<DeviceCase> {};

TEST_P(DeviceTransport, MatchesReferenceBitwise) {
    const DeviceCase& c = GetParam();
    const std::string& name = c.transport;
    if (const std::string why = cannotRunHere(c); !why.empty()) GTEST_SKIP() << why;

    runtime::World* mpi = mpiWorld();
    const std::vector<int> rankCounts = mpi ? std::vector<int>{mpi->size()} : std::vector<int>{2, 4};
    std::string skipped;  // configurations the machine cannot run (NCCL on shared GPUs)
    int ran = 0;
    for (int numRanks : rankCounts) {
        const auto scenarios = testsupport::scenariosForRanks(numRanks);
        ASSERT_FALSE(scenarios.empty()) << "no decomposition scenario for " << numRanks << " ranks";
        for (const auto& s : scenarios) {
            SCOPED_TRACE(fmt::format("{} on grid {} ({})", c.label(), s.grid, mpi ? "MPI ranks" : "thread ranks"));
            const plan::Decomposition d = testsupport::makeDecomposition(s);
            const testsupport::Expected expected = testsupport::referenceResults(d, s, planAlignment(c));
            std::vector<RankOutcome> outcomes(static_cast<std::size_t>(numRanks));
            const auto refused = testsupport::runOnRanks(
                mpi, numRanks,
                [&](runtime::World& w) {
                    outcomes[static_cast<std::size_t>(w.rank())] = runRank(w, c, d.box(), expected);
                },
                isSharedGpuRefusal);
            if (refused) {
                skipped += fmt::format("{} on {} ranks skipped: {}\n", s.grid, numRanks, *refused);
                continue;
            }
            ++ran;
            const int first = mpi ? mpi->rank() : 0;
            const int last = mpi ? mpi->rank() + 1 : numRanks;
            for (int r = first; r < last; ++r) {
                const RankOutcome& o = outcomes[static_cast<std::size_t>(r)];
                EXPECT_EQ(o.mismatch, "") << "rank " << r;
                EXPECT_EQ(o.counters.forwardCalls, kSteps);
                EXPECT_EQ(o.counters.reverseCalls, kSteps);
                EXPECT_EQ(o.counters.hostSyncs, std::int64_t{2} * kSteps * o.pulses * syncsPerPulseAndDirection(name))
                    << "rank " << r << " with " << o.pulses << " pulses";
            }
        }
    }
    if (ran == 0) GTEST_SKIP() << skipped;
    if (!skipped.empty()) std::cout << skipped;
}

TEST_P(DeviceTransport, AdoptsNewPlansThatGrowAndShrink) {
    // Repartitioning: one transport object takes plans whose arrays grow
    // (new allocations: ipc re-exports and re-maps them) and shrink again.
    const DeviceCase& c = GetParam();
    if (const std::string why = cannotRunHere(c); !why.empty()) GTEST_SKIP() << why;
    runtime::World* mpi = mpiWorld();
    const int numRanks = mpi ? mpi->size() : 2;
    const auto grids = testsupport::scenariosForRanks(numRanks);
    ASSERT_FALSE(grids.empty()) << "no decomposition scenario for " << numRanks << " ranks";
    std::vector<testsupport::Scenario> sequence;
    for (int atoms : {400, 1800, 700}) {
        testsupport::Scenario s = grids.back();
        s.numAtoms = atoms;
        s.seed += static_cast<std::uint64_t>(atoms);
        sequence.push_back(s);
    }
    std::vector<plan::Decomposition> decompositions;
    std::vector<testsupport::Expected> expected;
    for (const auto& s : sequence) {
        decompositions.push_back(testsupport::makeDecomposition(s));
        expected.push_back(testsupport::referenceResults(decompositions.back(), s, planAlignment(c)));
    }
    std::vector<std::string> mismatches(static_cast<std::size_t>(numRanks));
    const auto body = [&](runtime::World& w) {
#if HALOEX_HAVE_CUDA
        cuda::selectDevice(w, true);
        cuda::Stream stream;
        const testsupport::MemoryOps memory = deviceMemory(stream);
        auto t = makeFor(c, w);
        // One set of arrays for every plan: they grow with the plans, and
        // the transport maps them again (ipc re-exports, nvshmem and
        // nccl-device take the new peers' addresses).
        testsupport::TransportRun run(*t, w);
        const auto r = static_cast<std::size_t>(w.rank());
        for (std::size_t k = 0; k < sequence.size(); ++k) {
            const auto result = testsupport::runTransport(run, expected[k].plans[r], expected[k].inputs[r],
                                                          decompositions[k].box(), memory, 1, [&w] { w.barrier(); });
            const std::string m = testsupport::compareResults(result, expected[k].outputs[r], w.rank(),
                                                              expected[k].plans[r].zoneMask, c.forceTolerance());
            if (!m.empty()) mismatches[r] += fmt::format("plan {} ({} atoms): {}; ", k, sequence[k].numAtoms, m);
        }
#else
        (void)w;
#endif
    };
    if (const auto refused = testsupport::runOnRanks(mpi, numRanks, body, isSharedGpuRefusal)) {
        GTEST_SKIP() << *refused;
    }
    testsupport::expectNoMismatches(mismatches, mpi);
}

#if HALOEX_HAVE_CUDA
// One rank's halo of one scenario, bound to the scenario's plan on fresh
// collective arrays of its transport (onBoundHalos).
struct BoundHalo {
    runtime::World& w;
    const plan::Decomposition& d;
    const testsupport::Expected& expected;
    std::size_t r;  // this rank
    const plan::ParticleHaloPlan& plan;
    std::size_t n;  // plan.numLocal
    testsupport::TransportRun& run;
    const testsupport::MemoryOps& m;
    cudaStream_t stream;
    transport::BlockTransport& transport;
};

// For every decomposition scenario of this rank count (thread ranks, or the
// MPI job's): on every rank the case's transport and its halo bound
// (BoundHalo), then `check(halo, mismatch)`, which appends what differs to
// `mismatch`; at the end each rank's mismatches are expected empty. Skips
// (with the reason) where the ranks cannot share the GPU.
template <class Check>
void onBoundHalos(const DeviceCase& c, Check check) {
    runtime::World* mpi = mpiWorld();
    const int numRanks = mpi ? mpi->size() : 2;
    const auto scenarios = testsupport::scenariosForRanks(numRanks);
    ASSERT_FALSE(scenarios.empty()) << "no decomposition scenario for " << numRanks << " ranks";
    std::vector<std::string> mismatches(static_cast<std::size_t>(numRanks));
    for (const auto& s : scenarios) {
        SCOPED_TRACE(fmt::format("{} on grid {}", c.label(), s.grid));
        const plan::Decomposition d = testsupport::makeDecomposition(s);
        const testsupport::Expected expected = testsupport::referenceResults(d, s, planAlignment(c));
        const auto body = [&](runtime::World& w) {
            cuda::selectDevice(w, true);
            cuda::Stream stream;
            const testsupport::MemoryOps m = deviceMemory(stream);
            auto t = makeFor(c, w);
            const auto r = static_cast<std::size_t>(w.rank());
            const plan::ParticleHaloPlan& plan = expected.plans[r];
            testsupport::TransportRun run(*t, w);
            const auto n = static_cast<std::size_t>(plan.numLocal);
            run.x.emplace(allocateCollective<Vec3f>(w, *t, n, "the test's coordinates"));
            run.f.emplace(allocateCollective<Vec3f>(w, *t, n, "the test's forces"));
            run.halo.setPlan(plan, *run.x, *run.f);
            BoundHalo halo{w, d, expected, r, plan, n, run, m, stream, *t};
            check(halo, mismatches[r]);
        };
        if (const auto refused = testsupport::runOnRanks(mpi, numRanks, body, isSharedGpuRefusal)) {
            GTEST_SKIP() << *refused;
        }
    }
    testsupport::expectNoMismatches(mismatches, mpi);
}
#endif

// A kernel of the caller stores the home coordinates through the table of
// homeCoordinateStores (as haloex-md's update does), then the forward after
// home stores moves the rest: the halo is the reference's bit for bit, round
// after round (forces travel back in between, as in an MD step), and the
// table is offered exactly where every pulse that sends home atoms has a
// load/store path (nvshmem direct and tma, not put; the nccl-device code over
// IPC windows; none of the CPU-orchestrated transports).
// Where it is empty the forward after home stores is a full forward. A last
// round has the storing kernel signal a forward that never comes before the
// plan is bound again (a search): the new plan's first forward must not take
// that signal for its own.
TEST_P(DeviceTransport, ForwardAfterHomeStoresMatchesReference) {
    const DeviceCase& c = GetParam();
    if (const std::string why = cannotRunHere(c); !why.empty()) GTEST_SKIP() << why;
#if !HALOEX_TEST_HOME_STORES
    GTEST_SKIP() << "this build has no CUDA kernels of its own for the test (haloex_cuda is missing)";
#else
    const bool offersStores = (c.transport == "nvshmem" && c.nvshmemPath != "put") || c.transport == kPeerFusedIpc;
    onBoundHalos(c, [&](BoundHalo& b, std::string& mismatch) {
        auto& [w, d, expected, r, plan, n, run, m, stream, transport] = b;
        const auto stores = run.halo.homeCoordinateStores(d.box());
        const bool sendsHome = std::any_of(plan.pulses.begin(), plan.pulses.end(),
                                           [](const plan::Pulse& p) { return p.numIndependent > 0; });
        if (stores.has_value() != (offersStores && sendsHome)) {
            mismatch += fmt::format("homeCoordinateStores is {} (expected {}); ", stores ? "offered" : "empty",
                                    offersStores && sendsHome ? "offered" : "empty");
        }
        // Signals offered for every pulse that sends home atoms alone
        // where each pulse is signalled with one word (nvshmem direct and
        // tma, the IPC windows), none where the coordinates are signalled
        // per sending block (the _blocksignals cases, as describe() says).
        const auto notes = b.transport.describe();
        const bool perBlock = !notes.empty() && notes.front().find("signalled per sending block") != std::string::npos;
        int allHome = 0;
        for (std::size_t p = 0; p < plan.pulses.size() && p < std::size_t{transport::HomeCoordinateStores::kMaxPulses};
             ++p) {
            allHome += plan.pulses[p].sendCount() == plan.pulses[p].numIndependent ? 1 : 0;
        }
        const int expectedSignals = perBlock ? 0 : allHome;
        if (stores && stores->numSignals != expectedSignals) {
            mismatch += fmt::format("{} signals offered, expected {} ({} pulses send home atoms alone, "
                                    "signals per block: {}); ",
                                    stores->numSignals, expectedSignals, allHome, perBlock);
        }
        // The end of every round: the halo against the reference's bit
        // for bit (a mismatch named by `round`), then the forces travel
        // back, as in an MD step.
        const auto checkHaloThenReverse = [&](const std::string& round) {
            m.synchronize();
            const std::string got = testsupport::compareBitwise("coordinates after home stores", w.rank(),
                                                                testsupport::download<Vec3f>(m, run.x->data(), n),
                                                                expected.outputs[r].x, plan.zoneMask);
            if (!got.empty()) mismatch += fmt::format("{}: {}; ", round, got);
            testsupport::upload(m, run.f->data(), expected.inputs[r].f);
            run.halo.scatterAddForces(stream);
            run.halo.clearForces(stream);
            m.synchronize();
        };
        // Rounds 0-1: the forward signals every pulse; rounds 2-3: the
        // storing kernel signals those it can (gatherCoordinatesAfterHomeSignals).
        for (int round = 0; round < 4; ++round) {
            const bool signal = round >= 2;
            testsupport::upload(m, run.x->data(), expected.inputs[r].x);  // halo slots hold sentinels
            w.barrier();  // no peer stores into them before they are written
            if (stores) testsupport::storeHomeCoordinates(*stores, run.x->data(), plan.numHome, signal, stream);
            if (signal) {
                run.halo.gatherCoordinatesAfterHomeSignals(d.box(), stream);
            } else {
                run.halo.gatherCoordinatesAfterHomeStores(d.box(), stream);
            }
            checkHaloThenReverse(fmt::format("round {} (signals by the storing kernel: {})", round, signal));
        }
        // A search between the update and the forward: the storing
        // kernel signals a forward that never comes, and the plan is
        // bound again. Binding moves the coordinate counter on, so the
        // new plan's first forward must not take that stale signal for
        // its own: with rank 0's stores held back 200 ms, a receiver
        // that did would find its halo slots still holding sentinels
        // (unless it read them only after those 200 ms). Collective, so
        // every rank runs the round or none does: a rank without
        // signals while another has them is a mismatch, not a hang.
        const bool signals = stores && stores->numSignals > 0;
        const bool everyRank =
            w.allReduceValue(std::int64_t{signals ? 1 : 0}, runtime::ReduceOp::Min) == std::int64_t{1};
        if (signals != everyRank) {
            mismatch += "the storing kernel's signals are offered on some ranks only; ";
        }
        if (everyRank) {
            testsupport::upload(m, run.x->data(), expected.inputs[r].x);
            w.barrier();
            testsupport::storeHomeCoordinates(*stores, run.x->data(), plan.numHome, true, stream);
            m.synchronize();
            w.barrier();  // every stale signal has landed
            run.halo.setPlan(plan, *run.x, *run.f);
            const auto rebound = run.halo.homeCoordinateStores(d.box());
            testsupport::upload(m, run.x->data(), expected.inputs[r].x);
            w.barrier();
            if (w.rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
            if (rebound) {
                testsupport::storeHomeCoordinates(*rebound, run.x->data(), plan.numHome, true, stream);
                run.halo.gatherCoordinatesAfterHomeSignals(d.box(), stream);
            } else {
                mismatch += "homeCoordinateStores is empty after the plan was bound again; ";
                run.halo.gatherCoordinates(d.box(), stream);
            }
            checkHaloThenReverse("after a stale signal and a new bind");
        }
    });
#endif
}

// The caller's halo records (haloex-md's non-local slots, filled and emptied
// by the exchange instead of its gather and scatter kernels): with
// copyReceivedCoordinates the fused transports' forward also copies each
// received coordinate into its record -- x, y, z bit for bit the reference's
// halo, the record's fourth float kept, an element mapped to -1 (and the
// slots' padding) not copied; with addHaloForcesFromRecords their reverse
// takes each halo element's force as its entry plus its record (the test
// puts the whole force in the record) and zeroes the record: the owners'
// forces are the reference's within float tolerance. Exchange after
// exchange; a new bind stops both. The other transports decline both and
// touch no record.
TEST_P(DeviceTransport, HaloRecordsMatchTheReference) {
    const DeviceCase& c = GetParam();
    if (const std::string why = cannotRunHere(c); !why.empty()) GTEST_SKIP() << why;
#if !HALOEX_HAVE_CUDA
    GTEST_SKIP() << "this build has no CUDA";
#else
    onBoundHalos(c, [&](BoundHalo& b, std::string& mismatch) {
        auto& [w, d, expected, r, plan, n, run, m, stream, transport] = b;
        // Halo element e has record n - 1 - e (reversed: the exchange
        // follows the map, not the order), every third one none.
        const std::size_t home = static_cast<std::size_t>(plan.numHome);
        const std::size_t numRecords = std::max<std::size_t>(n - home, 1);
        std::vector<int> recordOf(n, -1);
        for (std::size_t e = home; e < n; ++e) {
            if ((e - home) % 3 != 2) recordOf[e] = static_cast<int>(n - 1 - e);
        }
        std::vector<bool> received(n, false);  // not the slots' padding
        for (const plan::Pulse& p : plan.pulses) {
            for (int i = 0; i < p.recvCount; ++i) received[static_cast<std::size_t>(p.recvOffset + i)] = true;
        }
        const auto recorded = [&](std::size_t e) { return e >= home && received[e] && recordOf[e] >= 0; };
        std::vector<float> untouched(4 * numRecords);
        for (std::size_t i = 0; i < untouched.size(); ++i) untouched[i] = -1000.0f - static_cast<float>(i);
        cuda::DeviceBuffer<int> dRecordOf(n);
        cuda::DeviceBuffer<float> dPositions(untouched.size()), dForces(untouched.size());
        testsupport::upload(m, dRecordOf.data(), recordOf);
        const bool copies = run.halo.copyReceivedCoordinates({dPositions.data(), 4, dRecordOf.data()});
        const bool takes = run.halo.addHaloForcesFromRecords({dForces.data(), 4, dRecordOf.data()});
        if (copies != fusedKernels(c) || takes != fusedKernels(c)) {
            mismatch += fmt::format("copyReceivedCoordinates returned {}, addHaloForcesFromRecords {} (expected "
                                    "{} for both); ",
                                    copies, takes, fusedKernels(c));
        }
        // The records' floats against `want`, bit for bit.
        const auto checkRecords = [&](const std::string& what, const float* device, const std::vector<float>& want) {
            const auto got = testsupport::download<float>(m, device, want.size());
            int wrong = 0;
            std::size_t first = 0;
            for (std::size_t i = 0; i < want.size(); ++i) {
                if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0 && wrong++ == 0) first = i;
            }
            if (wrong > 0) {
                mismatch += fmt::format("{}: {} of {} floats differ, the first float {} of record {}: {} "
                                        "(expected {}); ",
                                        what, wrong, want.size(), first % 4, first / 4, got[first], want[first]);
            }
        };
        // One forward and its reverse, as in an MD step.
        const auto exchangeAndCheck = [&](const std::string& round, bool recordsSet) {
            testsupport::upload(m, dPositions.data(), untouched);
            testsupport::upload(m, run.x->data(), expected.inputs[r].x);  // halo slots hold sentinels
            w.barrier();  // no peer stores into them before they are written
            run.halo.gatherCoordinates(d.box(), stream);
            m.synchronize();
            const std::string got =
                testsupport::compareBitwise("coordinates", w.rank(), testsupport::download<Vec3f>(m, run.x->data(), n),
                                            expected.outputs[r].x, plan.zoneMask);
            if (!got.empty()) mismatch += fmt::format("{}: {}; ", round, got);
            std::vector<float> wantPositions = untouched;
            // The halo's forces: in their records where they are set
            // (their entries zero), else in their entries.
            std::vector<Vec3f> f = expected.inputs[r].f;
            std::vector<float> forceRecords = untouched, wantForceRecords = untouched;
            for (std::size_t e = home; e < n; ++e) {
                if (!recorded(e)) continue;
                const auto at = 4 * static_cast<std::size_t>(recordOf[e]);
                const Vec3f x = expected.outputs[r].x[e];
                if (recordsSet && copies) {
                    wantPositions[at] = x.x;
                    wantPositions[at + 1] = x.y;
                    wantPositions[at + 2] = x.z;
                }
                if (recordsSet && takes) {
                    forceRecords[at] = f[e].x;
                    forceRecords[at + 1] = f[e].y;
                    forceRecords[at + 2] = f[e].z;
                    f[e] = Vec3f{};
                    wantForceRecords[at] = wantForceRecords[at + 1] = wantForceRecords[at + 2] = 0.0f;
                }
            }
            checkRecords(round + ": position records", dPositions.data(), wantPositions);
            testsupport::upload(m, dForces.data(), forceRecords);
            testsupport::upload(m, run.f->data(), f);
            w.barrier();
            run.halo.scatterAddForces(stream);
            m.synchronize();
            const auto forces = testsupport::download<Vec3f>(m, run.f->data(), n);
            const double tolerance = c.forceTolerance();
            const std::string gotF =
                tolerance > 0.0
                    ? testsupport::compareClose("forces", w.rank(), forces, expected.outputs[r].f, plan.zoneMask,
                                                tolerance)
                    : testsupport::compareBitwise("forces", w.rank(), forces, expected.outputs[r].f, plan.zoneMask);
            if (!gotF.empty()) mismatch += fmt::format("{}: {}; ", round, gotF);
            checkRecords(round + ": force records after the reverse", dForces.data(),
                         recordsSet && takes ? wantForceRecords : forceRecords);
            run.halo.clearForces(stream);
            m.synchronize();
            w.barrier();
        };
        exchangeAndCheck("first exchange", true);
        exchangeAndCheck("second exchange", true);
        run.halo.setPlan(plan, *run.x, *run.f);
        exchangeAndCheck("after a new bind", false);
    });
#endif
}

// The search step's blocks (migration, the device plan builder, the halo
// API's batches): exchangeBlock, exchangeBlocks, exchangeBlocksInPlace and
// exchangeAgreedBlocksInPlace (the largest block agreed by a reduction after
// the previous call's blocks were read, as the search step's count
// exchange does) deliver every byte from the right peer, call after call, while the sizes
// grow (the transport's staging grows with them) and shrink, with empty
// blocks among them. Ranks form a ring; block 0 goes down, block 1 up.
TEST_P(DeviceTransport, ExchangesSearchStepBlocks) {
    const DeviceCase& c = GetParam();
    if (const std::string why = cannotRunHere(c); !why.empty()) GTEST_SKIP() << why;
    runtime::World* mpi = mpiWorld();
    const int numRanks = mpi ? mpi->size() : 3;
    // The byte rank `from` sends as byte i of block b in call k.
    const auto byteOf = [](int from, int b, int k, std::size_t i) {
        return static_cast<unsigned char>((from * 37 + b * 101 + k * 13 + static_cast<int>(i % 251)) & 0xff);
    };
    // Bytes per block and call: rank-dependent, some empty, one call large
    // enough to grow any staging.
    const auto bytesOf = [](int from, int b, int k) -> std::size_t {
        static constexpr std::size_t kSizes[] = {48, 0, 1000, 3u << 20, 24, 7};
        const std::size_t n = kSizes[static_cast<std::size_t>(k) % std::size(kSizes)];
        return n == 0 ? 0 : n + static_cast<std::size_t>(from * 16 + b * 8);
    };
    constexpr int kCalls = 8;
    std::vector<std::string> mismatches(static_cast<std::size_t>(numRanks));
    const auto body = [&](runtime::World& w) {
#if HALOEX_HAVE_CUDA
        cuda::selectDevice(w, true);
        cuda::Stream stream;
        auto t = makeFor(c, w);
        const int me = w.rank(), n = w.size();
        const int lower = (me + n - 1) % n, upper = (me + 1) % n;
        std::string& out = mismatches[static_cast<std::size_t>(me)];
        for (int k = 0; k < kCalls; ++k) {
            // Block 0 goes to the lower neighbour (and comes from the upper
            // one), block 1 the other way.
            const int dest[2] = {lower, upper}, src[2] = {upper, lower};
            std::vector<unsigned char> host[2];
            cuda::DeviceBuffer<unsigned char> send[2], recv[2];
            transport::BlockExchange blocks[2];
            for (int b = 0; b < 2; ++b) {
                const std::size_t sendBytes = bytesOf(me, b, k), recvBytes = bytesOf(src[b], b, k);
                host[b].resize(sendBytes);
                for (std::size_t i = 0; i < sendBytes; ++i) host[b][i] = byteOf(me, b, k, i);
                send[b].resize(std::max<std::size_t>(sendBytes, 1));
                recv[b].resize(std::max<std::size_t>(recvBytes, 1));
                HALOEX_CUDA_CHECK(cudaMemcpy(send[b].data(), host[b].data(), sendBytes, cudaMemcpyHostToDevice));
                blocks[b] = {send[b].data(), sendBytes, dest[b], recv[b].data(), recvBytes, src[b]};
            }
            const void* landed[2] = {recv[0].data(), recv[1].data()};
            static constexpr const char* kForms[] = {"exchangeBlock", "exchangeBlocks", "exchangeBlocksInPlace",
                                                     "exchangeAgreedBlocksInPlace"};
            const char* form = kForms[k % 4];
            if (k % 4 == 0) {
                for (const auto& x : blocks)
                    t->exchangeBlock(x.send, x.sendBytes, x.dest, x.recv, x.recvBytes, x.src, stream);
            } else if (k % 4 == 1) {
                t->exchangeBlocks(blocks, stream);
            } else if (k % 4 == 2) {
                t->exchangeBlocksInPlace(blocks, landed, stream);
            } else {
                const auto agreed = w.allReduceValue<std::int64_t>(
                    static_cast<std::int64_t>(std::max(blocks[0].sendBytes, blocks[1].sendBytes)),
                    runtime::ReduceOp::Max);
                t->exchangeAgreedBlocksInPlace(blocks, landed, static_cast<std::size_t>(agreed), stream);
            }
            // Read before the transport's next call (what landed in place
            // stays only until then).
            for (int b = 0; b < 2; ++b) {
                std::vector<unsigned char> got(blocks[b].recvBytes);
                if (!got.empty()) {
                    HALOEX_CUDA_CHECK(cudaMemcpyAsync(got.data(), landed[b], got.size(), cudaMemcpyDefault, stream));
                }
                HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
                for (std::size_t i = 0; i < got.size(); ++i) {
                    if (got[i] != byteOf(src[b], b, k, i)) {
                        out += fmt::format("call {} ({}), block {} from rank {}: byte {} of {} is {}, expected {}; ", k,
                                           form, b, src[b], i, got.size(), got[i], byteOf(src[b], b, k, i));
                        break;
                    }
                }
            }
        }
#else
        (void)w, (void)byteOf, (void)bytesOf;
#endif
    };
    if (const auto refused = testsupport::runOnRanks(mpi, numRanks, body, isSharedGpuRefusal)) {
        GTEST_SKIP() << *refused;
    }
    testsupport::expectNoMismatches(mismatches, mpi);
}

INSTANTIATE_TEST_SUITE_P(Transports, DeviceTransport, ::testing::ValuesIn(deviceCases()),
                         [](const ::testing::TestParamInfo<DeviceCase>& p) { return p.param.label(); });

TEST(DeviceSelection, RefusesMoreRanksThanGpusWithoutOptIn) {
    if (const std::string why = noGpuReason(); !why.empty()) GTEST_SKIP() << why;
    if (mpiWorld()) GTEST_SKIP() << "checked with thread ranks only";
#if HALOEX_HAVE_CUDA
    const int gpus = cuda::deviceCount();
    try {
        runtime::runInProcess(gpus + 1, [](runtime::World& w) { cuda::selectDevice(w, false); });
        ADD_FAILURE() << gpus + 1 << " ranks on " << gpus << " GPUs must be refused";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--allow-shared-gpus"), std::string::npos) << e.what();
    }
    runtime::runInProcess(gpus + 1, [&](runtime::World& w) {
        const int device = cuda::selectDevice(w, true);
        EXPECT_EQ(device, w.rank() % gpus);
        const auto ids = cuda::gatherGpuIdentities(w);
        EXPECT_EQ(static_cast<int>(ids.size()), gpus + 1);
        EXPECT_TRUE(cuda::findSharedGpu(ids).has_value()) << "rank " << gpus << " shares GPU 0 with rank 0";
    });
#endif
}

#if HALOEX_HAVE_CUDA
TEST(DeviceSelection, FindsTheFirstSharedGpu) {
    // Pure host logic: runs without a GPU too.
    const std::vector<cuda::GpuIdentity> gpus{{"node-a", "0000:1B:00.0", 0},
                                              {"node-b", "0000:1B:00.0", 0},
                                              {"node-a", "0000:2C:00.0", 1},
                                              {"node-a", "0000:1B:00.0", 0}};
    const auto shared = cuda::findSharedGpu(gpus);
    ASSERT_TRUE(shared.has_value());
    EXPECT_EQ(*shared, (std::pair{0, 3}));
    EXPECT_FALSE(cuda::findSharedGpu({gpus[0], gpus[1], gpus[2]}).has_value()) << "same bus id on other nodes";
    EXPECT_EQ(cuda::describeSharedGpu(gpus), "ranks 0 and 3 share GPU 0000:1B:00.0 on node-a");
    EXPECT_EQ(cuda::describeSharedGpu({gpus[0], gpus[1], gpus[2]}), "");
}
#endif

TEST(TransportFactory, DeviceTransportsRefuseHostMemory) {
    if (mpiWorld()) GTEST_SKIP() << "checked with thread ranks only";
    transport::TransportOptions host;
    host.memorySpace = transport::MemorySpace::Host;
    // Every known transport without a host-memory form, built or not (an
    // unbuilt one is refused as unavailable, InvalidInput as well).
    for (Backend backend : knownBackends()) {
        if (backend == Backend::Reference || backend == Backend::Staged) continue;
        try {
            transport::makeTransport(backend, runtime::singleRankWorld(), host);
            ADD_FAILURE() << toString(backend) << " in host memory must be refused";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidInput) << e.what();
        }
    }
}

TEST(TransportFactory, ListsWhatThisBuildHasAndExplainsTheRest) {
    const auto available = availableBackends();
    ASSERT_GE(available.size(), 2u);
    EXPECT_EQ(available[0], Backend::Reference);
    EXPECT_EQ(available[1], Backend::Staged);
    for (Backend backend : knownBackends()) {
        const std::string why = unavailableReason(backend);
        const bool listed = std::find(available.begin(), available.end(), backend) != available.end();
        EXPECT_EQ(why.empty(), listed) << toString(backend);
        if (listed) continue;
        std::cout << "  " << toString(backend) << " is not in this build: " << why << "\n";
        try {
            transport::makeTransport(backend, runtime::singleRankWorld(), {});
            ADD_FAILURE() << toString(backend) << " is unavailable but was made";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
            EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
        }
    }
    // The oracle runs on in-process worlds, in host memory: its default.
    EXPECT_EQ(transport::makeTransport(Backend::Reference, runtime::singleRankWorld())->memorySpace(),
              transport::MemorySpace::Host);
    transport::TransportOptions device;
    device.memorySpace = transport::MemorySpace::Device;
    EXPECT_THROW(transport::makeTransport(Backend::Reference, runtime::singleRankWorld(), device), Error)
        << "the reference has no device memory";
}

}  // namespace
