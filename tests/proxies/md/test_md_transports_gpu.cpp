// The MD engine over MPI ranks on GPUs, every device transport against the
// CPU reference (labels gpu;mpi; np1, np2 and np4 under mpi_gpu_launch: one
// GPU per rank, or ranks sharing one under MPS, else skipped with the reason).
// Each transport runs 20 steps with and without CUDA graphs, with graphs
// and the home atoms in cell order (--sort-atoms), and with the fused update
// (--fuse-update: the home atoms' force sums, leapfrog and next gather in
// one kernel: two kernels fewer in the captured normal step) with graphs, and
// with cell order and without graphs, and its total,
// potential and kinetic energy at every step must equal those of the CPU
// reference backend on the same ranks and decomposition within 1e-6
// relative (the bound's derivation is at kRelativeBound). staged, ipc and
// nvshmem share a GPU and must run wherever the job runs; nccl and
// nccl-device are refused by NCCL on ranks sharing a GPU and skip with
// NCCL's reason there (they run on one GPU per rank). This is the multi-rank
// energy check that scripts/device/run.sh's stage md-check made by hand:
// ctest -R test_md_transports_gpu_np runs it for any rank count registered.
// Several nvshmem ranks launch the forward exchange's kernel before the local
// one (the default); MdTransportsGpuLocalFirst and MdTransportsGpuStepsPerGraph:
// the same check for nvshmem with the local kernel first
// (HALOEX_FORWARD_FIRST=0) and with graphs of three steps.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "haloex/halo/backend.hpp"
#include "haloex/md/cpu_backend.hpp"
#include "haloex/md/engine.hpp"
#include "haloex/md/gpu_backend.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/transport/reference.hpp"
#include "mpi_test_main.hpp"

namespace {

using namespace haloex;

// Both backends evaluate every pair term in float (eps = 2^-24 = 6.0e-8)
// and add the terms in different orders: the CPU per rank in cell order,
// the GPU in per-thread float partials of at most 32 j clusters x 8 pairs
// (n = 256 terms), then warp and block sums in double. Over the same pairs
// (rlist 1.2 nm, no pruning: a 0.3 nm buffer that no atom crosses in 10 steps
// of 2 fs) the two differ only by rounding: a float sum of n terms in some
// order is within n * eps * sum|t| of the exact one, and its rounding errors,
// independent, walk to about sqrt(n) * eps = 1e-6 of each partial's sum|t|;
// the thousands of partials' independent errors shrink by their square root
// again relative to the total, to 1e-8..1e-7 of |E|. The forces carry the
// same relative error into 20 steps of 2 fs (0.04 ps), far below the time in
// which float differences grow chaotically (picoseconds), so the energies
// stay at that level. Measured: step 0, 4 000 atoms, GPU against CPU, LJ
// 2.2e-7 relative (docs/results.md, "GPU vs CPU energies"); staged against
// nvshmem on 2 and 4 ranks sharing a GPU, 4e-9 over 60 steps
// (docs/md-engine.md). 1e-6 is 4.5 times the largest; one halo copy lost
// (its ~50 pairs within rc, tens of kJ/mol of a total of -1.1e5 kJ/mol at
// 8 000 atoms) moves the total by 1e-4. Each run prints its largest difference.
constexpr double kRelativeBound = 1e-6;
constexpr int kSteps = 20;

md::MdOptions comparedOptions(int ranks) {
    md::MdOptions o;
    o.atoms = 4000LL * ranks;
    o.steps = kSteps;
    o.thermoEvery = 1;
    o.nstlist = 10;  // two searches within the compared steps
    o.rlist = 1.2;
    o.pruneParts = 0;
    o.grid = ranks == 4 ? "2x2x1" : fmt::format("{}x1x1", ranks);  // 1x1x1: no halo, the one-GPU engine
    o.quiet = true;
    o.logFile = "none";
    o.allowSharedGpus = true;
    return o;
}

// The CPU reference backend with options `o` on `ranks` thread ranks of this process (rank 0's summary).
md::RunSummary cpuRun(const md::MdOptions& o, int ranks) {
    const md::MdOptions resolved = md::resolveOptions(o, ranks, false);
    md::RunSummary out;
    runtime::runInProcess(ranks, [&](runtime::World& world) {
        transport::ReferenceTransport transport(world);
        auto backend = md::makeCpuBackend();
        md::Engine engine(resolved, world, transport, *backend);
        const md::RunSummary s = engine.run();
        if (world.rank() == 0) out = s;
    });
    return out;
}

// cpuRun with comparedOptions, once per rank count.
const md::RunSummary& cpuReference(int ranks) {
    static std::map<int, md::RunSummary> cache;
    if (auto it = cache.find(ranks); it != cache.end()) return it->second;
    return cache.emplace(ranks, cpuRun(comparedOptions(ranks), ranks)).first->second;
}

struct GpuRun {
    md::RunSummary summary;
    bool capturable = false;  // the claim of the transport's coordinate/force fast path
};

struct StepKernels {
    bool graphs = false;
    bool sortAtoms = false;
    bool fuseUpdate = false;
};

// `base`: the options before the step kernels' (comparedOptions where not given).
GpuRun runOnGpu(runtime::World& world, Backend backend, StepKernels k, bool timelineParts,
                const md::MdOptions* base = nullptr) {
    const bool graphs = k.graphs;
    md::MdOptions o = base != nullptr ? *base : comparedOptions(world.size());
    o.transport = std::string(toString(backend));
    o.sortAtoms = k.sortAtoms ? md::Toggle::On : md::Toggle::Off;
    o.fuseUpdate = k.fuseUpdate ? md::Toggle::On : md::Toggle::Off;
    o.cudaGraphs = graphs;
    o.cudaGraphsGiven = graphs;  // as --cuda-graphs 1 (nccl captures only when given)
    const md::MdOptions resolved = md::resolveOptions(o, world.size(), true);
    transport::TransportOptions t;
    t.memorySpace = transport::MemorySpace::Device;
    t.allowSharedGpus = true;
    auto transport = makeTransport(backend, world, t);
    GpuRun run;
    const auto fastPath = transport->makeCoordinateForceExchange();
    run.capturable = fastPath != nullptr && fastPath->graphCapturable();
    md::GpuBackendOptions backendOptions;
    backendOptions.timelineParts = timelineParts;
    auto gpu = md::makeGpuBackend(backendOptions);
    md::Engine engine(resolved, world, *transport, *gpu);
    run.summary = engine.run();
    return run;
}

// The search step's account: migrate's and plan's own parts, in the order
// they ran (with several ranks the counts, collectives and blocks of the
// decomposed dimension and its pulse; one rank exchanges nothing), their
// sum within the phase's wall time.
void expectSearchAccount(const md::RunSummary& s, int ranks) {
    const auto partsOf = [&](const std::string& phase) {
        std::vector<std::string> names;
        double sum = 0.0;
        if (const auto it = s.searchPhasePartsMs.find(phase); it != s.searchPhasePartsMs.end()) {
            for (const auto& [name, ms] : it->second) {
                names.push_back(name);
                sum += ms;
                EXPECT_GE(ms, 0.0) << phase << ": " << name;
            }
        }
        const auto total = s.searchPhasesMs.find(phase);
        EXPECT_NE(total, s.searchPhasesMs.end()) << phase;
        if (total != s.searchPhasesMs.end()) {
            EXPECT_LE(sum, total->second * 1.0001 + 1e-6) << phase;
        }
        return names;
    };
    using Names = std::vector<std::string>;
    if (ranks == 1) {
        EXPECT_EQ(partsOf("migrate"), (Names{"wrap"}));
        EXPECT_EQ(partsOf("plan"), (Names{"home"}));
    } else {
        EXPECT_EQ(partsOf("migrate"), (Names{"classify", "counts", "blocks", "fingerprint"}));
        EXPECT_EQ(partsOf("plan"), (Names{"home", "select", "counts", "blocks", "synchronise"}));
    }
    const Names pairSearch = partsOf("pair search");
    EXPECT_TRUE(!pairSearch.empty() && pairSearch.front() == "grid and counts") << pairSearch.size() << " parts";
}

double relative(double got, double want) { return std::abs(got - want) / std::max(std::abs(want), 1e-300); }

class MdTransportsGpu : public ::testing::TestWithParam<Backend> {};

// The largest relative differences of a run's energies from the reference's.
struct EnergyDifferences {
    double total = 0.0, potential = 0.0, kinetic = 0.0;
};

// Every energy sample of `gpu` (rank 0's) equals the CPU reference's within
// kRelativeBound, step by step: total, potential and kinetic.
EnergyDifferences expectEnergiesMatch(const md::RunSummary& gpu, const md::RunSummary& cpu) {
    EnergyDifferences worst;
    EXPECT_EQ(gpu.energies.size(), cpu.energies.size());
    for (std::size_t k = 0; k < std::min(gpu.energies.size(), cpu.energies.size()); ++k) {
        const md::EnergySample& g = gpu.energies[k];
        const md::EnergySample& c = cpu.energies[k];
        if (g.step != c.step) {
            ADD_FAILURE() << "energy sample " << k << " is of step " << g.step << ", the CPU's of step " << c.step;
            return worst;
        }
        worst.total = std::max(worst.total, relative(g.total, c.total));
        worst.potential = std::max(worst.potential, relative(g.potential, c.potential));
        worst.kinetic = std::max(worst.kinetic, relative(g.kinetic, c.kinetic));
        EXPECT_LE(relative(g.total, c.total), kRelativeBound)
            << "step " << g.step << ": total " << g.total << " against the CPU's " << c.total;
        EXPECT_LE(relative(g.potential, c.potential), kRelativeBound)
            << "step " << g.step << ": potential " << g.potential << " against the CPU's " << c.potential;
        EXPECT_LE(relative(g.kinetic, c.kinetic), kRelativeBound)
            << "step " << g.step << ": kinetic " << g.kinetic << " against the CPU's " << c.kinetic;
    }
    return worst;
}

TEST_P(MdTransportsGpu, EnergiesMatchTheCpuReferenceWithAndWithoutGraphs) {
    runtime::World& world = testsupport::mpiTestWorld();
    const Backend backend = GetParam();
    if (md::visibleGpuCount() == 0) GTEST_SKIP() << "no GPU visible: run under mpi_gpu_launch on a GPU machine";
    md::selectGpuForRank(world, /*allowShared=*/true);
    if (const std::string why = unavailableReason(backend, world); !why.empty()) {
        const bool sharesGpus = backend == Backend::Staged || backend == Backend::Ipc || backend == Backend::Nvshmem;
        if (sharesGpus && unavailableReason(backend).empty()) {
            FAIL() << toString(backend) << " runs on ranks sharing a GPU, yet was refused: " << why;
        }
        GTEST_SKIP() << toString(backend) << ": " << why;
    }
    const md::RunSummary* cpu = world.rank() == 0 ? &cpuReference(world.size()) : nullptr;
    world.barrier();  // the others wait here, not inside a transport's timed set-up
    // With and without graphs; with the home atoms in cell order (--sort-atoms);
    // with the fused update (--fuse-update) with graphs, and with cell order
    // and without graphs.
    // Kernels of the captured normal step, unfused and fused (-1: no graph ran).
    int graphKernelsUnfused = -1, graphKernelsFused = -1;
    for (const StepKernels kernels :
         {StepKernels{true, false, false}, StepKernels{false, false, false}, StepKernels{true, true, false},
          StepKernels{true, false, true}, StepKernels{false, true, true}}) {
        const bool graphs = kernels.graphs, sortAtoms = kernels.sortAtoms;
        SCOPED_TRACE(fmt::format("{} on {} ranks, CUDA graphs {}, atoms in cell order {}, fused update {}",
                                 toString(backend), world.size(), graphs, sortAtoms, kernels.fuseUpdate));
        // The cell-order run without the fused update also records the
        // timeline's parts (and timestamps inside the exchange kernels).
        const bool timelineParts = sortAtoms && !kernels.fuseUpdate;
        const GpuRun run = runOnGpu(world, backend, kernels, timelineParts);
        const md::RunSummary& gpu = run.summary;
        EXPECT_EQ(gpu.steps, kSteps);
        EXPECT_EQ(gpu.transport, toString(backend));
        expectSearchAccount(gpu, world.size());
        // The graph path ran wherever the exchange can be captured, and on
        // one rank with any transport (no halo, nothing is exchanged in a step).
        EXPECT_EQ(gpu.graphs, graphs && (run.capturable || world.size() == 1));
        // The timeline is sampled from the last step before each wait:
        // the normal step's graph records no event (each would sit on the
        // step's critical path), and samples were still taken.
        if (gpu.graphs) {
            const auto events = gpu.stepGraphNodes.find("event record");
            EXPECT_EQ(events == gpu.stepGraphNodes.end() ? 0 : events->second, 0);
        }
        EXPECT_GT(gpu.timings.samples, 0);
        EXPECT_EQ(gpu.timings.localUs.size(), static_cast<std::size_t>(gpu.timings.samples));
        if (gpu.graphs && !sortAtoms) {
            const auto it = gpu.stepGraphNodes.find("kernel");
            (kernels.fuseUpdate ? graphKernelsFused : graphKernelsUnfused) =
                it == gpu.stepGraphNodes.end() ? 0 : it->second;
        }
        if (timelineParts) {
            // The GPU-initiated transports time their kernels from inside
            // (--timeline-parts), the others do not; one rank exchanges nothing.
            const bool fused = backend == Backend::Nvshmem || backend == Backend::NcclDevice;
            const auto& parts = gpu.timings.exchangeKernelUs;
            if (!fused || world.size() == 1) {
                EXPECT_TRUE(parts.empty()) << parts.size() << " parts, the first " << parts.front().first;
            } else {
                for (const char* name : {"forward kernel", "forward p0 stores", "forward p0 until received",
                                         "reverse kernel", "reverse p0 until received"}) {
                    const auto it =
                        std::find_if(parts.begin(), parts.end(), [&](const auto& part) { return part.first == name; });
                    ASSERT_NE(it, parts.end()) << name;
                    EXPECT_EQ(it->second.size(), static_cast<std::size_t>(gpu.timings.samples)) << name;
                }
            }
        }
        if (cpu == nullptr) continue;                                          // rank 0 holds the energies and compares
        ASSERT_EQ(gpu.energies.size(), static_cast<std::size_t>(kSteps) + 1);  // steps 0 to 20
        const EnergyDifferences worst = expectEnergiesMatch(gpu, *cpu);
        std::printf("%s, %d ranks, graphs %s%s%s: %zu energy steps, largest relative difference from the CPU "
                    "reference: total %.2e, potential %.2e, kinetic %.2e (bound %.0e)\n",
                    std::string(toString(backend)).c_str(), world.size(), gpu.graphs ? "on" : "off",
                    sortAtoms ? ", atoms in cell order" : "", kernels.fuseUpdate ? ", fused update" : "",
                    gpu.energies.size(), worst.total, worst.potential, worst.kinetic, kRelativeBound);
    }
    // The fused update replaces the local gather, the local scatter and the
    // leapfrog by one kernel (with a halo its forces are still cleared by the
    // transport's clearForces).
    if (graphKernelsUnfused >= 0 && graphKernelsFused >= 0) {
        EXPECT_EQ(graphKernelsFused, graphKernelsUnfused - 2)
            << "kernels in the normal step's graph: " << graphKernelsUnfused << " unfused, " << graphKernelsFused
            << " fused";
    }
}

// One nvshmem variant of the step on several ranks (set up by `variant`
// before the run: an environment variable or options) against the CPU
// reference with the same options (`changed`, or comparedOptions and its
// cached reference), with graphs, cell order and the fused update (the
// defaults of several GPU ranks). Skips where nvshmem cannot run, and on one
// rank (no exchange, nothing the variants change). `check` looks at rank 0's
// summary.
template <class Variant, class Check>
void expectNvshmemVariantMatchesCpu(const std::optional<md::MdOptions>& changed, const char* what, Variant variant,
                                    Check check) {
    runtime::World& world = testsupport::mpiTestWorld();
    if (md::visibleGpuCount() == 0) GTEST_SKIP() << "no GPU visible: run under mpi_gpu_launch on a GPU machine";
    if (world.size() == 1) GTEST_SKIP() << "one rank exchanges nothing: " << what << " needs two or more";
    md::selectGpuForRank(world, /*allowShared=*/true);
    if (const std::string why = unavailableReason(Backend::Nvshmem, world); !why.empty()) {
        GTEST_SKIP() << "nvshmem: " << why;
    }
    md::MdOptions o = changed.value_or(comparedOptions(world.size()));
    md::RunSummary cpu;
    if (world.rank() == 0) cpu = changed ? cpuRun(o, world.size()) : cpuReference(world.size());
    world.barrier();
    const auto undo = variant(o);
    const GpuRun run = runOnGpu(world, Backend::Nvshmem, StepKernels{true, true, true}, false, &o);
    undo();
    const md::RunSummary& gpu = run.summary;
    EXPECT_EQ(gpu.steps, o.steps);
    EXPECT_TRUE(gpu.graphs);
    if (world.rank() != 0) return;
    check(gpu);
    expectEnergiesMatch(gpu, cpu);
}

// Sets an environment variable for the variant's run; the returned call unsets it.
auto withEnvironment(const char* name, const char* value) {
    return [=](md::MdOptions&) {
        EXPECT_EQ(setenv(name, value, 1), 0);
        return [=] { unsetenv(name); };
    };
}

// HALOEX_FORWARD_FIRST=0 (docs/md-engine.md): nvshmem's local force kernel
// launched before the forward kernel, the order before forward-first became
// the default (the tests above run that default).
TEST(MdTransportsGpuLocalFirst, NvshmemMatchesTheCpuReference) {
    expectNvshmemVariantMatchesCpu(
        std::nullopt, "the local-first order", withEnvironment("HALOEX_FORWARD_FIRST", "0"),
        [](const md::RunSummary& gpu) {
            ASSERT_EQ(gpu.exchangeNotes.size(), 3u);
            EXPECT_NE(gpu.exchangeNotes[0].find("local force kernel is launched before"), std::string::npos)
                << gpu.exchangeNotes[0];
            EXPECT_NE(gpu.exchangeNotes[1].find("update stores"), std::string::npos) << gpu.exchangeNotes[1];
            EXPECT_NE(gpu.exchangeNotes[2].find("a gather kernel"), std::string::npos) << gpu.exchangeNotes[2];
            EXPECT_NE(gpu.exchangeNotes[2].find("a scatter kernel"), std::string::npos) << gpu.exchangeNotes[2];
        });
}

// HALOEX_HOME_SIGNALS=1 (docs/md-engine.md): the update's last block also
// signals the receivers of the pulses that send home atoms alone (2x1x1 and
// 2x2x1 each have one), and nvshmem's forward signals only the rest; by
// default (the tests above) the forward signals every receiver.
TEST(MdTransportsGpuWithHomeSignals, NvshmemMatchesTheCpuReference) {
    expectNvshmemVariantMatchesCpu(std::nullopt, "the update's last block signalling receivers",
                                   withEnvironment("HALOEX_HOME_SIGNALS", "1"), [](const md::RunSummary& gpu) {
                                       ASSERT_EQ(gpu.exchangeNotes.size(), 3u);
                                       EXPECT_NE(gpu.exchangeNotes[1].find("update stores"), std::string::npos)
                                           << gpu.exchangeNotes[1];
                                       EXPECT_NE(gpu.exchangeNotes[1].find("also signals"), std::string::npos)
                                           << gpu.exchangeNotes[1];
                                   });
}

// HALOEX_HOME_STORES=0 (docs/md-engine.md): nvshmem's forward stores the
// home atoms' coordinates itself instead of the fused update storing them
// into the receivers (the default, which the tests above run).
TEST(MdTransportsGpuWithoutHomeStores, NvshmemMatchesTheCpuReference) {
    expectNvshmemVariantMatchesCpu(std::nullopt, "the forward storing the home entries itself",
                                   withEnvironment("HALOEX_HOME_STORES", "0"), [](const md::RunSummary& gpu) {
                                       ASSERT_EQ(gpu.exchangeNotes.size(), 3u);
                                       EXPECT_NE(gpu.exchangeNotes[1].find("(HALOEX_HOME_STORES=0)"), std::string::npos)
                                           << gpu.exchangeNotes[1];
                                   });
}

// HALOEX_FORWARD_COPY=1 and HALOEX_REVERSE_RECORDS=1 (docs/md-engine.md):
// nvshmem's forward copies the halo positions into the non-local kernel's
// slots and its reverse takes the halo forces from them, instead of a
// gather kernel after the forward and a scatter kernel before the reverse
// (the default, which the tests above run); each alone, so that either
// half pairs with the other's kernel, and both.
void expectHaloRecordsMatchCpu(const char* copy, const char* records) {
    const bool copyOn = std::string(copy) == "1", recordsOn = std::string(records) == "1";
    expectNvshmemVariantMatchesCpu(
        std::nullopt, "the exchange moving the halo through the non-local slots",
        [=](md::MdOptions&) {
            EXPECT_EQ(setenv("HALOEX_FORWARD_COPY", copy, 1), 0);
            EXPECT_EQ(setenv("HALOEX_REVERSE_RECORDS", records, 1), 0);
            return [] {
                unsetenv("HALOEX_FORWARD_COPY");
                unsetenv("HALOEX_REVERSE_RECORDS");
            };
        },
        [=](const md::RunSummary& gpu) {
            ASSERT_EQ(gpu.exchangeNotes.size(), 3u);
            const std::string& note = gpu.exchangeNotes[2];
            EXPECT_EQ(note.find("the forward copies the halo positions") != std::string::npos, copyOn) << note;
            EXPECT_EQ(note.find("the reverse takes the halo forces") != std::string::npos, recordsOn) << note;
        });
}
TEST(MdTransportsGpuWithHaloRecords, NvshmemMatchesTheCpuReferenceWithTheForwardCopy) {
    expectHaloRecordsMatchCpu("1", "0");
}
TEST(MdTransportsGpuWithHaloRecords, NvshmemMatchesTheCpuReferenceWithTheReverseRecords) {
    expectHaloRecordsMatchCpu("0", "1");
}
TEST(MdTransportsGpuWithHaloRecords, NvshmemMatchesTheCpuReferenceWithBoth) { expectHaloRecordsMatchCpu("1", "1"); }

// --steps-per-graph on several nvshmem ranks (docs/md-engine.md): the normal
// steps launched as graphs of three steps, each with its halo exchanges;
// 40 steps, energies every 10, a search every 20, so each call's nine
// normal steps queue four one by one (the GPU runs them while the host
// captures) and then graphs of three. The energies at steps 0, 10, ..., 40
// equal the CPU reference's, and graphs of several steps did run.
TEST(MdTransportsGpuStepsPerGraph, NvshmemMatchesTheCpuReference) {
    md::MdOptions o = comparedOptions(testsupport::mpiTestWorld().size());
    o.steps = 40;
    o.thermoEvery = 10;
    o.nstlist = 20;
    expectNvshmemVariantMatchesCpu(
        o, "graphs of several steps with an exchange",
        [](md::MdOptions& options) {
            options.stepsPerGraph = 3;
            return [] {};
        },
        [](const md::RunSummary& gpu) {
            EXPECT_GE(gpu.stepsInMultiStepGraphs, 3 * 4) << "a graph of three steps should have run in every call";
            EXPECT_LE(gpu.stepsInMultiStepGraphs, gpu.normalSteps);
        });
}

INSTANTIATE_TEST_SUITE_P(DeviceTransports, MdTransportsGpu,
                         ::testing::Values(Backend::Staged, Backend::Ipc, Backend::Nvshmem, Backend::Nccl,
                                           Backend::NcclDevice),
                         [](const ::testing::TestParamInfo<Backend>& p) {
                             std::string name(toString(p.param));
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

}  // namespace
