// GPU non-bonded module (nonbonded.hpp) against the CPU reference of the
// same cluster-pair list (exact: layout and lists element by element) and
// against the double-precision force oracle (forces, energies, pair counts),
// for whole systems and ranks of in-process decompositions; plus concurrent
// streams, CUDA-graph capture, rebuilds and input errors.
//
// Every failure message says what differs (first differing element, worst
// atoms), so one run on the GPU machine is enough to locate a problem.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ostream>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "haloex/core/error.hpp"
#include "gpu_test_support.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/md/gpu/cluster_reference.hpp"
#include "haloex/md/gpu/integrate.hpp"
#include "haloex/md/gpu/nonbonded.hpp"
#include "md_test_support.hpp"

using namespace haloex;
using namespace haloex::md::gpu;
using haloex::testing::download;
using haloex::testing::FloatSystem;
using haloex::testing::RankSystem;
using haloex::testing::upload;

namespace {

constexpr double kRlist = 1.0;
constexpr double kForceTolerance = 1e-5;   // ||df|| / ||f|| against the double oracle
constexpr double kEnergyTolerance = 1e-5;  // relative to the sum of |pair terms|

// One rank's inputs, on the host and the device.
struct Inputs {
    std::string name;
    std::vector<Vec3f> x;
    std::vector<float> q;
    std::vector<plan::ZoneMask> zone;  // empty: all home
    int numHome = 0;
    plan::Box box;
    std::array<bool, 3> periodic{true, true, true};
    std::vector<bool> padding;

    int numLocal() const { return static_cast<int>(x.size()); }
    int maxJ = 32;  // the entry length the GPU build chose (Nonbonded::maxJClustersPerEntry)
    SearchSettings settings() const { return {box, periodic, kRlist, maxJ}; }
};

Inputs inputsOf(const FloatSystem& s) {
    Inputs in{s.name, s.x, s.q, {}, static_cast<int>(s.x.size()), s.box, {true, true, true}, {}};
    in.padding.assign(s.x.size(), false);
    return in;
}

Inputs inputsOf(const RankSystem& r, const std::string& name) {
    Inputs in{fmt::format("{} rank {}", name, r.rank), r.x, r.q, r.zone, r.numHome, r.box, r.periodic, {}};
    for (int i = 0; i < r.numLocal; ++i) in.padding.push_back((r.zone[i] & plan::kPaddingMask) != 0);
    return in;
}

struct DeviceInputs {
    cuda::DeviceBuffer<Vec3f> x;
    cuda::DeviceBuffer<float> q;
    cuda::DeviceBuffer<std::uint8_t> zone;
    cuda::DeviceBuffer<Vec3f> f;
    bool haveZone = false;

    explicit DeviceInputs(const Inputs& in)
        : x(upload(in.x)), q(upload(in.q)), zone(upload(in.zone)), f(std::max(in.x.size(), std::size_t{1})),
          haveZone(!in.zone.empty()) {}
    const std::uint8_t* zonePtr() const { return haveZone ? zone.data() : nullptr; }
};

void build(Nonbonded& nb, Inputs& in, DeviceInputs& d, cudaStream_t stream) {
    nb.build(d.x.data(), d.q.data(), d.zonePtr(), in.numHome, in.numLocal(), in.box, in.periodic, stream);
    in.maxJ = nb.maxJClustersPerEntry();
}

// --- exact comparison with the CPU reference ------------------------------

std::string firstLayoutDifference(const ClusterLayoutHost& gpu, const ClusterLayoutHost& ref) {
    const auto grid = [](const ColumnGrid& g) {
        return fmt::format("origin ({}, {}, {}) inv cell ({}, {}) {}x{} columns from {}, z key {} bits x {}", g.x0,
                           g.y0, g.z0, g.invCellX, g.invCellY, g.nx, g.ny, g.firstColumn, g.zBits, g.zScale);
    };
    for (int k = 0; k < 2; ++k) {
        const ColumnGrid& a = k == 0 ? gpu.grids.home : gpu.grids.halo;
        const ColumnGrid& b = k == 0 ? ref.grids.home : ref.grids.halo;
        if (grid(a) != grid(b))
            return fmt::format("{} grid: GPU {} vs CPU {}", k == 0 ? "home" : "halo", grid(a), grid(b));
    }
    if (gpu.numClusters != ref.numClusters || gpu.numHomeClusters != ref.numHomeClusters) {
        return fmt::format("clusters: GPU {} ({} home) vs CPU {} ({} home)", gpu.numClusters, gpu.numHomeClusters,
                           ref.numClusters, ref.numHomeClusters);
    }
    for (std::size_t c = 0; c < ref.columnClusterStart.size(); ++c) {
        if (gpu.columnClusterStart[c] != ref.columnClusterStart[c]) {
            return fmt::format("column {} starts at cluster {} on the GPU, {} on the CPU", c, gpu.columnClusterStart[c],
                               ref.columnClusterStart[c]);
        }
    }
    for (std::size_t s = 0; s < ref.atomOfSlot.size(); ++s) {
        if (gpu.atomOfSlot[s] != ref.atomOfSlot[s]) {
            return fmt::format("slot {} (cluster {}) holds atom {} on the GPU, {} on the CPU", s, s / kClusterSize,
                               gpu.atomOfSlot[s], ref.atomOfSlot[s]);
        }
    }
    for (int c = 0; c < ref.numClusters; ++c) {
        const auto& a = gpu.bboxLo[c];
        const auto& b = ref.bboxLo[c];
        const auto& ah = gpu.bboxHi[c];
        const auto& bh = ref.bboxHi[c];
        if (a.x != b.x || a.y != b.y || a.z != b.z || ah.x != bh.x || ah.y != bh.y || ah.z != bh.z) {
            return fmt::format("bounding box of cluster {}: GPU ({},{},{})-({},{},{}) CPU ({},{},{})-({},{},{})", c,
                               a.x, a.y, a.z, ah.x, ah.y, ah.z, b.x, b.y, b.z, bh.x, bh.y, bh.z);
        }
    }
    return {};
}

std::string firstListDifference(const PairListHost& gpu, const PairListHost& ref) {
    if (gpu.pairs.size() != ref.pairs.size() || gpu.entries.size() != ref.entries.size()) {
        std::string s = fmt::format("GPU list has {} entries / {} cluster pairs, CPU {} / {}", gpu.entries.size(),
                                    gpu.pairs.size(), ref.entries.size(), ref.pairs.size());
        // Point at the first i cluster whose j count differs.
        const std::size_t n = std::min(gpu.entries.size(), ref.entries.size());
        for (std::size_t e = 0; e < n; ++e) {
            const ClusterEntry& a = gpu.entries[e];
            const ClusterEntry& b = ref.entries[e];
            if (a.ci != b.ci || a.jBegin != b.jBegin || a.jEnd != b.jEnd) {
                s += fmt::format("; first differing entry {}: GPU (ci {}, j [{}, {})) CPU (ci {}, j [{}, {}))", e, a.ci,
                                 a.jBegin, a.jEnd, b.ci, b.jBegin, b.jEnd);
                break;
            }
        }
        return s;
    }
    for (std::size_t e = 0; e < ref.entries.size(); ++e) {
        const ClusterEntry& a = gpu.entries[e];
        const ClusterEntry& b = ref.entries[e];
        if (a.ci != b.ci || a.jBegin != b.jBegin || a.jEnd != b.jEnd) {
            return fmt::format("entry {}: GPU (ci {}, j [{}, {})) CPU (ci {}, j [{}, {}))", e, a.ci, a.jBegin, a.jEnd,
                               b.ci, b.jBegin, b.jEnd);
        }
    }
    for (std::size_t k = 0; k < ref.pairs.size(); ++k) {
        const ClusterPair& a = gpu.pairs[k];
        const ClusterPair& b = ref.pairs[k];
        if (a.cj != b.cj || a.shift != b.shift || a.maskLo != b.maskLo || a.maskHi != b.maskHi) {
            return fmt::format("cluster pair {}: GPU (cj {}, shift {}, mask {:08x}{:08x}) CPU (cj {}, shift {}, mask "
                               "{:08x}{:08x})",
                               k, a.cj, a.shift, a.maskHi, a.maskLo, b.cj, b.shift, b.maskHi, b.maskLo);
        }
    }
    return {};
}

void expectSameAsReference(const Inputs& in, Nonbonded& nb) {
    const ClusterLayoutHost ref = buildLayoutReference(in.x, in.zone, in.numHome);
    const ClusterLayoutHost gpu = nb.copyLayoutToHost();
    const std::string layoutDiff = firstLayoutDifference(gpu, ref);
    EXPECT_TRUE(layoutDiff.empty()) << in.name << ": cluster layout differs from the CPU reference: " << layoutDiff;
    if (!layoutDiff.empty()) return;
    for (bool nonlocal : {false, true}) {
        const PairListHost refList = searchReference(ref, in.x, in.zone, nonlocal, in.settings());
        const PairListHost gpuList = nb.copyListToHost(nonlocal ? ListKind::Nonlocal : ListKind::Local);
        const std::string diff = firstListDifference(gpuList, refList);
        EXPECT_TRUE(diff.empty()) << in.name << ": " << (nonlocal ? "non-local" : "local")
                                  << " list differs from the CPU reference: " << diff;
        const PairListStats stats = nb.stats(nonlocal ? ListKind::Nonlocal : ListKind::Local);
        EXPECT_EQ(stats.clusterPairs, static_cast<std::int64_t>(refList.pairs.size())) << in.name;
        EXPECT_EQ(stats.entries, static_cast<int>(refList.entries.size())) << in.name;
        EXPECT_EQ(stats.atomPairs, refList.atomPairs()) << in.name << " (set mask bits)";
    }
}

// --- forces and energies ----------------------------------------------------

struct GpuResult {
    std::vector<Vec3f> forces;
    double energies[kNumEnergies] = {0, 0, 0};
    std::int64_t pairsLocal = 0, pairsNonlocal = 0;
};

GpuResult computeOnGpu(Nonbonded& nb, const Inputs& in, DeviceInputs& d, cudaStream_t stream) {
    GpuResult r;
    HALOEX_CUDA_CHECK(cudaMemsetAsync(d.f.data(), 0, d.f.bytes(), stream));
    nb.clearEnergies(stream);
    nb.computeLocal(d.x.data(), d.f.data(), true, stream);
    nb.computeNonlocal(d.x.data(), d.f.data(), true, stream);
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    r.forces = download(d.f, in.x.size());
    HALOEX_CUDA_CHECK(cudaMemcpy(r.energies, nb.deviceEnergies(), sizeof(r.energies), cudaMemcpyDeviceToHost));
    r.pairsLocal = nb.countPairsWithinCutoff(ListKind::Local, d.x.data(), stream);
    r.pairsNonlocal = nb.countPairsWithinCutoff(ListKind::Nonlocal, d.x.data(), stream);
    return r;
}

// The CPU reference evaluation of the same lists (float, kernel formula).
struct ReferenceResult {
    std::vector<Vec3f> forces;
    ListEnergies local, nonlocal;
};

ReferenceResult evaluateReference(const Inputs& in, const md::ForceField& ff) {
    ReferenceResult r;
    const ClusterLayoutHost layout = buildLayoutReference(in.x, in.zone, in.numHome);
    r.forces.assign(in.x.size(), Vec3f{});
    const PairListHost local = searchReference(layout, in.x, in.zone, false, in.settings());
    const PairListHost nonlocal = searchReference(layout, in.x, in.zone, true, in.settings());
    r.local = evaluateListReference(layout, local, in.x, in.q, in.settings(), ff, r.forces);
    r.nonlocal = evaluateListReference(layout, nonlocal, in.x, in.q, in.settings(), ff, r.forces);
    return r;
}

void expectMatches(const Inputs& in, const GpuResult& gpu, const md::PairForces<double>& oracle,
                   const ReferenceResult& ref) {
    std::unique_ptr<bool[]> skip(new bool[in.x.size()]);
    for (std::size_t i = 0; i < in.x.size(); ++i) skip[i] = in.padding[i];
    const std::span<const bool> skipSpan(skip.get(), in.x.size());
    const auto diff = haloex::testing::compareForces(gpu.forces, oracle.forces, -1, skipSpan);
    EXPECT_LE(diff.relativeNorm, kForceTolerance) << in.name << ": GPU forces vs double oracle: " << diff.report;
    std::vector<Vec3d> refForces(ref.forces.size());
    for (std::size_t i = 0; i < ref.forces.size(); ++i) refForces[i] = Vec3d(ref.forces[i]);
    const auto diffRef = haloex::testing::compareForces(gpu.forces, refForces, -1, skipSpan);
    EXPECT_LE(diffRef.relativeNorm, kForceTolerance)
        << in.name << ": GPU forces vs CPU list evaluation: " << diffRef.report;

    // Pair counts: exactly the reference's (same rounding); the oracle may
    // decide pairs within an ulp of rc differently.
    EXPECT_EQ(gpu.pairsLocal, ref.local.pairsWithinCutoff) << in.name << ": local pairs within rc";
    EXPECT_EQ(gpu.pairsNonlocal, ref.nonlocal.pairsWithinCutoff) << in.name << ": non-local pairs within rc";
    const std::int64_t pairs = gpu.pairsLocal + gpu.pairsNonlocal;
    EXPECT_LE(std::abs(pairs - oracle.pairsWithinCutoff),
              haloex::testing::allowedPairCountDifference(oracle.pairsWithinCutoff))
        << in.name << ": " << gpu.pairsLocal << " local + " << gpu.pairsNonlocal << " non-local pairs, oracle "
        << oracle.pairsWithinCutoff;

    const auto expectEnergy = [&](const char* what, double got, double expected, double magnitude) {
        EXPECT_TRUE(haloex::testing::energyAgrees(got, expected, magnitude, kEnergyTolerance))
            << in.name << ": " << what << " GPU " << fmt::format("{:.8g}", got) << " oracle "
            << fmt::format("{:.8g}", expected) << " (sum of |terms| " << magnitude << ")";
    };
    expectEnergy("LJ", gpu.energies[kEnergyLj], oracle.ljEnergy, ref.local.ljMagnitude + ref.nonlocal.ljMagnitude);
    expectEnergy("Coulomb", gpu.energies[kEnergyCoulomb], oracle.coulombEnergy,
                 ref.local.coulombMagnitude + ref.nonlocal.coulombMagnitude);
    expectEnergy("virial", gpu.energies[kEnergyVirial], oracle.virial,
                 ref.local.virialMagnitude + ref.nonlocal.virialMagnitude);
    fmt::print("{}: pairs within rc {} (oracle {}), ||df||/||f|| {:.2e} (vs CPU list {:.2e}), "
               "LJ {:.6f} / {:.6f}, Coulomb {:.6f} / {:.6f}\n",
               in.name, pairs, oracle.pairsWithinCutoff, diff.relativeNorm, diffRef.relativeNorm,
               gpu.energies[kEnergyLj], oracle.ljEnergy, gpu.energies[kEnergyCoulomb], oracle.coulombEnergy);
}

void checkSystem(Inputs in, const md::PairForces<double>& oracle, NonbondedOptions options = {}) {
    const md::ForceField ff;
    cuda::Stream stream;
    Nonbonded nb(ff, kRlist, options);
    DeviceInputs d(in);
    build(nb, in, d, stream);
    expectSameAsReference(in, nb);
    const GpuResult gpu = computeOnGpu(nb, in, d, stream);
    expectMatches(in, gpu, oracle, evaluateReference(in, ff));
}

}  // namespace

TEST(NonbondedGpu, Ref3000MatchesOracle) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    const FloatSystem s = haloex::testing::loadRef3000(ff);
    const auto oracle = haloex::testing::oracleSingle(s, ff);
    checkSystem(inputsOf(s), oracle);
    // Explicit entry lengths: several chunks of 32 (128, 45), one chunk, and
    // lengths that are not powers of two.
    for (int maxJ : {128, 45, 32, 5, 1}) {
        NonbondedOptions options;
        options.maxJClustersPerEntry = maxJ;
        SCOPED_TRACE(fmt::format("maxJClustersPerEntry {}", maxJ));
        checkSystem(inputsOf(s), oracle, options);
    }
}

TEST(NonbondedGpu, LatticeSystemsMatchOracle) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    for (int n : {1000, 6000, 30000, 100000}) {
        const FloatSystem s = haloex::testing::latticeSystem(n, 100 + n, 0.02, ff);
        checkSystem(inputsOf(s), haloex::testing::oracleSingle(s, ff));
    }
}

TEST(NonbondedGpu, UniformRandomSystemListsMatchReference) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    for (int n : {777, 5000}) {
        const FloatSystem s = haloex::testing::uniformSystem(n, std::cbrt(n / 100.0) + 0.4, 7 + n, ff);
        Inputs in = inputsOf(s);
        cuda::Stream stream;
        Nonbonded nb(ff, kRlist);
        DeviceInputs d(in);
        build(nb, in, d, stream);
        expectSameAsReference(in, nb);
        // Random positions give close pairs: compare with the CPU evaluation of the same list.
        const GpuResult gpu = computeOnGpu(nb, in, d, stream);
        const ReferenceResult ref = evaluateReference(in, ff);
        std::vector<Vec3d> refForces(ref.forces.size());
        for (std::size_t i = 0; i < ref.forces.size(); ++i) refForces[i] = Vec3d(ref.forces[i]);
        const auto diff = haloex::testing::compareForces(gpu.forces, refForces);
        EXPECT_LE(diff.relativeNorm, 1e-4) << in.name << ": " << diff.report;
        EXPECT_EQ(gpu.pairsLocal, ref.local.pairsWithinCutoff) << in.name;
    }
}

struct RankCase {
    std::string name;
    plan::Int3 grid;
    int numAtoms;
    int alignment;
};

// Keeps gtest from printing the case as raw bytes.
void PrintTo(const RankCase& c, std::ostream* os) { *os << c.name; }

class NonbondedGpuRanks : public ::testing::TestWithParam<RankCase> {};

TEST_P(NonbondedGpuRanks, LocalPlusNonlocalMatchRankOracle) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    const RankCase& c = GetParam();
    const FloatSystem s = haloex::testing::latticeSystem(c.numAtoms, 31, 0.02, ff);
    const auto ranks = haloex::testing::decompose(s, c.grid, ff.rc, kRlist, c.alignment);
    for (const RankSystem& r : ranks) {
        const Inputs in = inputsOf(r, c.name);
        checkSystem(in, haloex::testing::oracleRank(r, ff));
    }
}

INSTANTIATE_TEST_SUITE_P(Grids, NonbondedGpuRanks,
                         ::testing::Values(RankCase{"g2x2x1", {2, 2, 1}, 8000, 1},
                                           RankCase{"g2x2x2_padded", {2, 2, 2}, 16000, 4},
                                           RankCase{"g4x1x1_2pulses", {4, 1, 1}, 3000, 8},
                                           RankCase{"g3x2x1", {3, 2, 1}, 20000, 4}),
                         [](const auto& param) { return param.param.name; });

// The one-pass search gives the reference's lists element by element: one
// rank (periodic shifts), random positions, a tall box (columns of more than
// two chunks of 32 clusters, through the periodic z shifts: the z windows'
// binary searches), and a rank of a 2x2x1 grid with its non-local list.
TEST(NonbondedGpu, SearchKernelsGiveTheReferenceList) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    const FloatSystem lattice = haloex::testing::latticeSystem(6000, 106, 0.02, ff);
    const FloatSystem random = haloex::testing::uniformSystem(5000, std::cbrt(50.0) + 0.4, 5007, ff);
    const FloatSystem tall = haloex::testing::uniformSystemInBox(17280, {3.0, 3.0, 24.0}, 5011, ff);
    const FloatSystem split = haloex::testing::latticeSystem(8000, 31, 0.02, ff);
    const auto ranks = haloex::testing::decompose(split, {2, 2, 1}, ff.rc, kRlist, 1);
    std::vector<Inputs> cases{inputsOf(lattice), inputsOf(random), inputsOf(tall), inputsOf(ranks[0], "g2x2x1 rank 0")};
    for (Inputs& in : cases) {
        cuda::Stream stream;
        Nonbonded nb(ff, kRlist);
        DeviceInputs d(in);
        // The first build may overflow the initial scratch slots (the fill
        // pass then writes the list, checking the one-pass counts); the
        // slots grow, and the second build compacts them.
        build(nb, in, d, stream);
        expectSameAsReference(in, nb);
        build(nb, in, d, stream);
        expectSameAsReference(in, nb);
        if (in.name == tall.name) {
            const ClusterLayoutHost layout = nb.copyLayoutToHost();
            int most = 0;
            for (std::size_t c = 0; c + 1 < layout.columnClusterStart.size(); ++c) {
                most = std::max(most, layout.columnClusterStart[c + 1] - layout.columnClusterStart[c]);
            }
            EXPECT_GT(most, 64) << "the tall box must give columns of more than two chunks";
        }
    }
}

// The search graph (NonbondedOptions::searchGraph): one Nonbonded built again
// and again, as the search steps of a run do, with the atoms moved, on a rank
// of a decomposition (non-local list, padding), with more atoms (the
// capacities grow: captured again), and with the same atoms spread over a
// slab (more columns than the capacity: the build's second pass), and in one
// column too long for the per-column sort (the global sort from then on);
// each build equals the reference, with the graph and call by call, with
// the per-column and the global sort.
TEST(NonbondedGpu, SearchGraphGivesTheReferenceListsAsTheAtomsMoveAndGrow) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    struct GraphGuard {
        ~GraphGuard() {
            unsetenv("HALOEX_SEARCH_GRAPH");
            unsetenv("HALOEX_COLUMN_SORT");
        }
    } guard;
    const FloatSystem lattice = haloex::testing::latticeSystem(6000, 211, 0.02, ff);
    const auto ranks =
        haloex::testing::decompose(haloex::testing::latticeSystem(16000, 5, 0.02, ff), {2, 2, 1}, ff.rc, kRlist, 4);
    const FloatSystem larger = haloex::testing::latticeSystem(9000, 212, 0.02, ff);
    const FloatSystem slab = haloex::testing::uniformSystemInBox(9000, {12.0, 12.0, 2.6}, 213, ff);
    for (const auto& [graph, columnSort] : {std::pair{"1", "1"}, std::pair{"1", "0"}, std::pair{"0", "1"}}) {
        SCOPED_TRACE(fmt::format("HALOEX_SEARCH_GRAPH={} HALOEX_COLUMN_SORT={}", graph, columnSort));
        ASSERT_EQ(setenv("HALOEX_SEARCH_GRAPH", graph, 1), 0);
        ASSERT_EQ(setenv("HALOEX_COLUMN_SORT", columnSort, 1), 0);
        cuda::Stream stream;
        Nonbonded nb(ff, kRlist);
        const auto check = [&](Inputs in, const std::string& what) {
            SCOPED_TRACE(what);
            DeviceInputs d(in);
            build(nb, in, d, stream);
            expectSameAsReference(in, nb);
        };
        Inputs moving = inputsOf(lattice);
        check(moving, "first build");
        check(moving, "the same atoms again");
        const int captures = nb.searchGraphCaptures();
        for (int k = 0; k < 3; ++k) {  // every atom moves by up to 0.05 nm per build
            for (std::size_t i = 0; i < moving.x.size(); ++i) {
                moving.x[i].x += 0.05f * static_cast<float>(std::sin(1.7 * i + k));
                moving.x[i].y += 0.05f * static_cast<float>(std::cos(2.3 * i + k));
                moving.x[i].z += 0.05f * static_cast<float>(std::sin(0.9 * i - k));
            }
            check(moving, fmt::format("atoms moved, build {}", k + 1));
        }
        if (std::string(graph) == "1") {
            EXPECT_GE(nb.searchGraphCaptures(), 1);
            EXPECT_EQ(nb.searchGraphCaptures(), captures)
                << "builds of the same number of atoms in the same arrays must replay the graph, not capture it";
        } else {
            EXPECT_EQ(nb.searchGraphCaptures(), 0);
        }
        // From the second build on, the lists fit the arrays of the first:
        // the device compacts them (no second host round trip).
        EXPECT_GE(nb.deviceCompactions(), 1);
        Inputs rank0 = inputsOf(ranks[0], "g2x2x1 rank 0");
        check(rank0, "a rank with halo atoms and padding");
        const int compactions = nb.deviceCompactions();
        {
            SCOPED_TRACE("the same rank again: both lists and the non-local home clusters from the device");
            DeviceInputs d(rank0);
            build(nb, rank0, d, stream);
            EXPECT_EQ(nb.deviceCompactions(), compactions + 1);
            expectSameAsReference(rank0, nb);
            expectMatches(rank0, computeOnGpu(nb, rank0, d, stream), haloex::testing::oracleRank(ranks[0], ff),
                          evaluateReference(rank0, ff));
        }
        check(inputsOf(larger), "more atoms");
        check(inputsOf(slab), "a slab: more columns than the capacity");
        // One column of 3 000 atoms: more than one block sorts, so the build
        // runs again with the global sort (and keeps it).
        Inputs column = inputsOf(haloex::testing::uniformSystemInBox(3000, {0.45, 0.45, 150.0}, 214, ff));
        column.periodic = {false, false, true};
        check(column, "one column too long for the per-column sort");
        check(inputsOf(lattice), "the first system again (global sort)");
    }
}

// Local and non-local on two streams at once, then the same captured in a
// CUDA graph and replayed: identical forces and energies each time.
TEST(NonbondedGpu, ConcurrentStreamsAndGraphReplay) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    const FloatSystem s = haloex::testing::latticeSystem(16000, 5, 0.02, ff);
    const auto ranks = haloex::testing::decompose(s, {2, 2, 1}, ff.rc, kRlist, 4);
    Inputs in = inputsOf(ranks[0], "g2x2x1");
    const auto oracle = haloex::testing::oracleRank(ranks[0], ff);

    cuda::Stream localStream, nonlocalStream(cuda::Stream::highestPriority());
    cuda::Event forked, joined;
    Nonbonded nb(ff, kRlist);
    DeviceInputs d(in);
    build(nb, in, d, localStream);
    const ReferenceResult ref = evaluateReference(in, ff);
    ASSERT_GT(nb.stats(ListKind::Nonlocal).clusterPairs, 0);

    const auto enqueueStep = [&] {
        HALOEX_CUDA_CHECK(cudaMemsetAsync(d.f.data(), 0, d.f.bytes(), localStream));
        nb.clearEnergies(localStream);
        forked.record(localStream);
        forked.waitOn(nonlocalStream);
        nb.computeNonlocal(d.x.data(), d.f.data(), true, nonlocalStream);
        nb.computeLocal(d.x.data(), d.f.data(), true, localStream);
        joined.record(nonlocalStream);
        joined.waitOn(localStream);
    };
    const auto collect = [&] {
        GpuResult r;
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(localStream));
        r.forces = download(d.f, in.x.size());
        HALOEX_CUDA_CHECK(cudaMemcpy(r.energies, nb.deviceEnergies(), sizeof(r.energies), cudaMemcpyDeviceToHost));
        r.pairsLocal = ref.local.pairsWithinCutoff;
        r.pairsNonlocal = ref.nonlocal.pairsWithinCutoff;
        return r;
    };

    enqueueStep();
    expectMatches(in, collect(), oracle, ref);

    cudaGraph_t graph = nullptr;
    HALOEX_CUDA_CHECK(cudaStreamBeginCapture(localStream, cudaStreamCaptureModeThreadLocal));
    enqueueStep();
    HALOEX_CUDA_CHECK(cudaStreamEndCapture(localStream, &graph));
    cudaGraphExec_t exec = nullptr;
    HALOEX_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 3; ++replay) {
        HALOEX_CUDA_CHECK(cudaGraphLaunch(exec, localStream));
        SCOPED_TRACE(fmt::format("graph replay {}", replay));
        expectMatches(in, collect(), oracle, ref);
    }
    HALOEX_CUDA_CHECK(cudaGraphExecDestroy(exec));
    HALOEX_CUDA_CHECK(cudaGraphDestroy(graph));
}

// Forces without the energy flag leave the energies alone; a rebuild with a
// larger, then a smaller system reuses and grows buffers correctly.
TEST(NonbondedGpu, RebuildsAndEnergyFlag) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    cuda::Stream stream;
    Nonbonded nb(ff, kRlist);
    for (int n : {2000, 24000, 3000}) {
        const FloatSystem s = haloex::testing::latticeSystem(n, 77 + n, 0.02, ff);
        Inputs in = inputsOf(s);
        DeviceInputs d(in);
        build(nb, in, d, stream);
        expectSameAsReference(in, nb);
        nb.clearEnergies(stream);
        HALOEX_CUDA_CHECK(cudaMemsetAsync(d.f.data(), 0, d.f.bytes(), stream));
        nb.computeLocal(d.x.data(), d.f.data(), false, stream);
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
        double e[kNumEnergies];
        HALOEX_CUDA_CHECK(cudaMemcpy(e, nb.deviceEnergies(), sizeof(e), cudaMemcpyDeviceToHost));
        EXPECT_EQ(e[kEnergyLj], 0.0) << "energies touched without the energy flag";
        const auto oracle = haloex::testing::oracleSingle(s, ff);
        const auto diff = haloex::testing::compareForces(download(d.f, in.x.size()), oracle.forces);
        EXPECT_LE(diff.relativeNorm, kForceTolerance) << in.name << ": " << diff.report;
    }
}

TEST(NonbondedGpu, RejectsBadInput) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    EXPECT_THROW((void)Nonbonded(ff, 0.8), haloex::Error);  // rlist < rc
    cuda::Stream stream;
    Nonbonded nb(ff, kRlist);
    FloatSystem s = haloex::testing::latticeSystem(2000, 3, 0.0, ff);
    Vec3f dummy{};
    EXPECT_THROW(nb.computeLocal(&dummy, &dummy, false, stream), haloex::Error) << "compute before build";
    s.x[17].y = std::nanf("");
    Inputs in = inputsOf(s);
    DeviceInputs d(in);
    try {
        build(nb, in, d, stream);
        ADD_FAILURE() << "a NaN position was accepted";
    } catch (const haloex::Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
        EXPECT_NE(std::string(e.what()).find("atom 17"), std::string::npos) << e.what();
    }
    // Halo atoms without zone masks.
    EXPECT_THROW(nb.build(d.x.data(), d.q.data(), nullptr, 1000, 2000, s.box, {true, true, true}, stream),
                 haloex::Error);
}

// The fused update (one rank) takes home atoms followed by alignment
// padding -- a plan of 11 250 atoms has two such atoms -- and refuses a
// rank with halo atoms, naming how many.
TEST(NonbondedGpu, TheFusedUpdateTakesPaddingButNoHaloAtom) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    cuda::Stream stream;
    const auto update = [&](Nonbonded& nb, Inputs& in, DeviceInputs& d) {
        cuda::DeviceBuffer<Vec3f> v(static_cast<std::size_t>(in.numHome));
        v.zeroAsync(stream);
        LeapfrogArgs args;
        args.x = d.x.data();
        args.v = v.data();
        args.f = d.f.data();
        args.numAtoms = in.numHome;
        nb.computeLocalForces(false, stream);
        nb.updateLocal(args, d.f.data(), nullptr, stream);
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    };
    {
        const FloatSystem s = haloex::testing::latticeSystem(2000, 3, 0.02, ff);
        Inputs in = inputsOf(s);
        in.x.resize(2002, Vec3f{std::nanf(""), 0.f, 0.f});
        in.q.resize(2002, 0.f);
        in.zone.assign(2002, plan::ZoneMask{0});
        in.zone[2000] = in.zone[2001] = plan::kPaddingMask;
        in.padding.assign(2002, false);
        in.padding[2000] = in.padding[2001] = true;
        DeviceInputs d(in);
        Nonbonded nb(ff, kRlist);
        build(nb, in, d, stream);
        EXPECT_NO_THROW(update(nb, in, d));
    }
    {
        const FloatSystem s = haloex::testing::latticeSystem(6000, 4, 0.02, ff);
        Inputs in = inputsOf(haloex::testing::decompose(s, {2, 1, 1}, ff.rc, kRlist, 4).front(), "2x1x1");
        DeviceInputs d(in);
        Nonbonded nb(ff, kRlist);
        build(nb, in, d, stream);
        try {
            update(nb, in, d);
            ADD_FAILURE() << "the fused update took a rank with halo atoms";
        } catch (const haloex::Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
            EXPECT_NE(std::string(e.what()).find("halo atoms; the fused update is for one rank"), std::string::npos)
                << e.what();
        }
    }
}

// The fused update with a halo (updateHome) after computeNonlocalHalo -- the
// non-local list's home clusters kept in slot order, only the halo gathered
// and scattered -- and after the full computeNonlocal moves the home atoms
// as computeLocal + computeNonlocal + leapfrog do, up to the order of the
// float additions, over several steps (the halo atoms move by a fixed step,
// as an exchange would bring them). A rank of a 2x2x1 grid: its non-local list has home
// clusters and two zones of halo. Also with the halo moved by an exchange
// (setHaloMovedByExchange: the test copies the halo's positions into
// haloPositionRecords and zeroes haloForceRecords, as the fused transports'
// kernels do), pruned: the atoms move alike, and the update moves both
// lists' rolling prune on once a step.
TEST(NonbondedGpu, TheFusedUpdateWithAHaloMovesTheAtomsAsTheUnfusedStep) {
    HALOEX_REQUIRE_GPU();
    const md::ForceField ff;
    cuda::Stream stream;
    const FloatSystem s = haloex::testing::latticeSystem(6000, 5, 0.02, ff);
    Inputs in = inputsOf(haloex::testing::decompose(s, {2, 2, 1}, ff.rc, kRlist, 4).front(), "2x2x1");
    ASSERT_GT(in.numLocal(), in.numHome) << "the rank needs a halo";
    std::vector<Vec3f> v0(static_cast<std::size_t>(in.numHome));
    for (std::size_t i = 0; i < v0.size(); ++i) {
        const auto k = static_cast<float>(i);
        v0[i] = Vec3f{0.3f * std::sin(k), 0.3f * std::cos(1.3f * k), 0.3f * std::sin(0.7f * k + 1.f)};
    }
    enum class Path { Unfused, FusedHaloOnly, FusedFullNonlocal, FusedHaloByExchange };
    constexpr int kSteps = 4;
    struct Result {
        std::vector<Vec3f> x, v;
    };
    // With the exchange moving the halo (FusedHaloByExchange) the list is
    // pruned (4 parts), so that the rolling prune's counter is checked.
    constexpr int kParts = 4;
    constexpr Vec3f kHaloStep{0.002f, -0.0015f, 0.001f};  // nm a step, every halo atom
    std::string pruneMismatch;
    const auto run = [&](Path path) {
        Inputs mine = in;
        DeviceInputs d(mine);
        cuda::DeviceBuffer<Vec3f> v = upload(v0);
        d.f.zeroAsync(stream);
        const bool byExchange = path == Path::FusedHaloByExchange;
        NonbondedOptions options;
        if (byExchange) {
            options.rlistInner = 0.95;
            options.pruneParts = kParts;
        }
        Nonbonded nb(ff, kRlist, options);
        build(nb, mine, d, stream);
        // The exchange's halo records (what its kernels would touch):
        // the halo's positions copied in before the force kernel (and not
        // into d.x: a gather would read stale ones), their force records
        // zeroed after it (the halo's forces go nowhere here).
        std::vector<int> recordOf;
        std::size_t numRecords = 0;
        if (byExchange) {
            nb.setHaloMovedByExchange(true, true);
            const transport::HaloRecords positions = nb.haloPositionRecords();
            recordOf.resize(d.x.size());
            HALOEX_CUDA_CHECK(cudaMemcpy(recordOf.data(), positions.recordOfElement, recordOf.size() * sizeof(int),
                                         cudaMemcpyDeviceToHost));
            for (std::size_t e = 0; e < recordOf.size(); ++e) {
                numRecords = std::max(numRecords, static_cast<std::size_t>(recordOf[e] + 1));
            }
        }
        // The halo atoms move by kHaloStep a step, as an exchange would
        // bring them (halo: their positions this step).
        std::vector<Vec3f> halo = mine.x;
        const auto moveHalo = [&](int step) {
            for (std::size_t e = static_cast<std::size_t>(mine.numHome); e < halo.size(); ++e) {
                if (mine.padding.empty() || !mine.padding[e]) {
                    const auto k = static_cast<float>(step);
                    halo[e] = Vec3f{mine.x[e].x + k * kHaloStep.x, mine.x[e].y + k * kHaloStep.y,
                                    mine.x[e].z + k * kHaloStep.z};
                }
            }
        };
        const auto moveHaloRecords = [&](const transport::HaloRecords& r, bool positions) {
            std::vector<float> rec(4 * numRecords);
            HALOEX_CUDA_CHECK(cudaMemcpy(rec.data(), r.records, rec.size() * sizeof(float), cudaMemcpyDeviceToHost));
            for (std::size_t e = static_cast<std::size_t>(mine.numHome); e < recordOf.size(); ++e) {
                if (recordOf[e] < 0) continue;
                float* at = &rec[4 * static_cast<std::size_t>(recordOf[e])];
                at[0] = positions ? halo[e].x : 0.f;
                at[1] = positions ? halo[e].y : 0.f;
                at[2] = positions ? halo[e].z : 0.f;
            }
            HALOEX_CUDA_CHECK(cudaMemcpy(r.records, rec.data(), rec.size() * sizeof(float), cudaMemcpyHostToDevice));
        };
        LeapfrogArgs args;
        args.x = d.x.data();
        args.v = v.data();
        args.f = d.f.data();
        args.numAtoms = mine.numHome;
        const std::size_t haloBytes = (d.f.size() - static_cast<std::size_t>(mine.numHome)) * sizeof(Vec3f);
        for (int step = 0; step < kSteps; ++step) {
            moveHalo(step);
            if (!byExchange) {
                const auto home = static_cast<std::size_t>(mine.numHome);
                HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
                HALOEX_CUDA_CHECK(cudaMemcpy(d.x.data() + home, halo.data() + home,
                                             (halo.size() - home) * sizeof(Vec3f), cudaMemcpyHostToDevice));
            }
            if (path == Path::Unfused) {
                d.f.zeroAsync(stream);
                nb.computeLocal(d.x.data(), d.f.data(), false, stream);
                nb.computeNonlocal(d.x.data(), d.f.data(), false, stream);
                leapfrog(args, stream);
            } else {
                if (byExchange) {
                    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
                    moveHaloRecords(nb.haloPositionRecords(), true);
                }
                nb.computeLocalForces(false, stream);
                if (path == Path::FusedHaloOnly || byExchange) {
                    nb.computeNonlocalHalo(d.x.data(), d.f.data(), false, stream);
                } else {
                    nb.computeNonlocal(d.x.data(), d.f.data(), false, stream);
                }
                if (byExchange) {
                    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
                    moveHaloRecords(nb.haloForceRecords(), false);
                }
                nb.updateHome(args, d.f.data(), nullptr, stream);
                // Without the non-local scatter the update moves that
                // list's rolling prune on, once a step, as the local one's.
                for (ListKind kind : {ListKind::Local, ListKind::Nonlocal}) {
                    const int part = byExchange ? nb.nextPrunePart(kind) : -1;
                    if (byExchange && part != (step + 1) % kParts) {
                        pruneMismatch += fmt::format("{} list after step {}: next prune part {} (expected {}); ",
                                                     kind == ListKind::Local ? "local" : "non-local", step, part,
                                                     (step + 1) % kParts);
                    }
                }
                // What clearHaloForces does for a transport that needs it.
                HALOEX_CUDA_CHECK(cudaMemsetAsync(d.f.data() + mine.numHome, 0, haloBytes, stream));
            }
        }
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
        Result r;
        r.x = download(d.x, static_cast<std::size_t>(mine.numHome));
        r.v = download(v, v0.size());
        return r;
    };
    const Result unfused = run(Path::Unfused);
    // What moved, in the unfused step as the reference of compareForces (its
    // relative norm, the worst atoms in its report): velocities, and
    // displacements from the start (differences of nearby floats: exact).
    const auto displacements = [&](const std::vector<Vec3f>& x) {
        std::vector<Vec3f> d(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) {
            d[i] = Vec3f{x[i].x - in.x[i].x, x[i].y - in.x[i].y, x[i].z - in.x[i].z};
        }
        return d;
    };
    const auto asReference = [](const std::vector<Vec3f>& a) {
        std::vector<Vec3d> r(a.size());
        for (std::size_t i = 0; i < a.size(); ++i) r[i] = Vec3d(a[i]);
        return r;
    };
    const std::vector<Vec3d> unfusedV = asReference(unfused.v), unfusedDx = asReference(displacements(unfused.x));
    for (Path path : {Path::FusedHaloOnly, Path::FusedFullNonlocal, Path::FusedHaloByExchange}) {
        const char* name = path == Path::FusedHaloOnly ? "computeNonlocalHalo"
                           : path == Path::FusedFullNonlocal
                               ? "computeNonlocal"
                               : "computeNonlocalHalo with the halo moved by the exchange";
        const Result fused = run(path);
        const auto dv = haloex::testing::compareForces(fused.v, unfusedV);
        EXPECT_LE(dv.relativeNorm, 1e-5) << "updateHome after " << name << ": velocities after " << kSteps
                                         << " steps differ from the unfused step's: " << dv.report;
        const auto dx = haloex::testing::compareForces(displacements(fused.x), unfusedDx);
        EXPECT_LE(dx.relativeNorm, 1e-5) << "updateHome after " << name << ": displacements after " << kSteps
                                         << " steps differ from the unfused step's: " << dx.report;
    }
    EXPECT_EQ(pruneMismatch, "");
}

TEST(NonbondedGpu, ReportsKernelResources) {
    HALOEX_REQUIRE_GPU();
    for (const KernelResources& k : nonbondedKernelResources()) {
        fmt::print("{}: {} registers, {} bytes local memory\n", k.name, k.registers, k.localBytes);
        EXPECT_LE(k.localBytes, k.localBytesAllowed)
            << k.name << " spills more to local memory than its measured allowance (" << k.localBytesAllowed
            << " bytes): re-measure the launch bounds (run.sh stage kernel-variants)";
        EXPECT_GE(k.maxThreadsPerBlock, 128) << k.name;
    }
}
