// The cluster-pair list design, checked on the CPU through its reference
// implementation (cluster_reference.hpp, the same rules the GPU kernels use):
// layout invariants, every atom pair within rlist exactly once, and forces,
// energies and pair counts against the double-precision oracle -- whole
// systems and single ranks of in-process decompositions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <numeric>
#include <ostream>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/md/gpu/cluster_reference.hpp"
#include "md_test_support.hpp"

using namespace haloex;
using namespace haloex::md::gpu;
using haloex::testing::FloatSystem;
using haloex::testing::RankSystem;

namespace {

constexpr double kRlist = 1.0;
// Float kernel arithmetic against the double oracle on the same float inputs
// (measured ~1e-7..1e-6; see the printed values).
constexpr double kForceTolerance = 1e-5;
constexpr double kEnergyTolerance = 1e-5;

struct RankView {
    std::span<const Vec3f> x;
    std::span<const float> q;
    std::span<const plan::ZoneMask> zone;  // empty: all home
    int numHome;
    SearchSettings settings;
};

RankView viewOf(const FloatSystem& s) {
    return {s.x, s.q, {}, static_cast<int>(s.x.size()), {s.box, {true, true, true}, kRlist, 32}};
}
RankView viewOf(const RankSystem& r) { return {r.x, r.q, r.zone, r.numHome, {r.box, r.periodic, kRlist, 32}}; }

void expectLayoutValid(const RankView& v, const ClusterLayoutHost& layout) {
    const int numLocal = static_cast<int>(v.x.size());
    std::vector<int> seen(numLocal, 0);
    for (int slot = 0; slot < static_cast<int>(layout.atomOfSlot.size()); ++slot) {
        const int atom = layout.atomOfSlot[slot];
        if (atom < 0) continue;
        ASSERT_LT(atom, numLocal);
        ++seen[atom];
        const int cluster = slot / kClusterSize;
        EXPECT_EQ(cluster < layout.numHomeClusters, atom < v.numHome)
            << "slot " << slot << " (cluster " << cluster << ") holds atom " << atom << " of the wrong grid";
        const Float3 lo = layout.bboxLo[cluster], hi = layout.bboxHi[cluster];
        EXPECT_TRUE(v.x[atom].x >= lo.x && v.x[atom].x <= hi.x && v.x[atom].y >= lo.y && v.x[atom].y <= hi.y &&
                    v.x[atom].z >= lo.z && v.x[atom].z <= hi.z)
            << "atom " << atom << " outside the box of its cluster " << cluster;
    }
    for (int i = 0; i < numLocal; ++i) {
        const bool padding = !v.zone.empty() && (v.zone[i] & plan::kPaddingMask);
        EXPECT_EQ(seen[i], padding ? 0 : 1) << "local atom " << i << (padding ? " (padding)" : "") << " appears "
                                            << seen[i] << " times in the cluster layout";
    }
    for (int c = 0; c < layout.numClusters; ++c) {
        EXPECT_GE(layout.atomOfSlot[c * kClusterSize], 0) << "cluster " << c << " has an empty first slot";
    }
}

// Every (atom i, atom j) pair of the lists with its shift; duplicates and
// pairs within rlist missing from the lists are errors. Brute force O(N^2).
void expectPairsExactlyOnce(const RankView& v, const ClusterLayoutHost& layout, const PairListHost& local,
                            const PairListHost& nonlocal) {
    const Float3 lengths = boxLengthsF(v.settings.box);
    std::map<std::pair<int, int>, int> listed;  // (min atom, max atom) -> count
    for (const PairListHost* list : {&local, &nonlocal}) {
        for (const ClusterEntry& e : list->entries) {
            for (int k = e.jBegin; k < e.jEnd; ++k) {
                const ClusterPair& p = list->pairs[k];
                const Float3 sv = shiftVector(p.shift, lengths);
                for (int a = 0; a < kClusterSize; ++a) {
                    for (int b = 0; b < kClusterSize; ++b) {
                        const int bit = a * kClusterSize + b;
                        if (!(((bit < 32 ? p.maskLo >> bit : p.maskHi >> (bit - 32)) & 1u))) continue;
                        const int ai = layout.atomOfSlot[e.ci * kClusterSize + a];
                        const int aj = layout.atomOfSlot[p.cj * kClusterSize + b];
                        ASSERT_GE(ai, 0) << "mask bit on an empty i slot";
                        ASSERT_GE(aj, 0) << "mask bit on an empty j slot";
                        const Vec3f xi = v.x[ai];
                        const Vec3f xj = v.x[aj];
                        const float r2 = atomDistance2({xi.x, xi.y, xi.z}, {xj.x, xj.y, xj.z}, sv);
                        // Only pairs that can interact are counted: the other shifts of
                        // the same atom pair are far away by construction.
                        if (r2 < rlistSquared(kRlist)) ++listed[{std::min(ai, aj), std::max(ai, aj)}];
                    }
                }
            }
        }
    }
    const int n = static_cast<int>(v.x.size());
    const double r2max = kRlist * kRlist * (1 - 1e-5);  // stay clear of the float boundary
    int missing = 0, duplicated = 0;
    for (int i = 0; i < n; ++i) {
        if (!v.zone.empty() && (v.zone[i] & plan::kPaddingMask)) continue;
        for (int j = i + 1; j < n; ++j) {
            if (!v.zone.empty() && !plan::zonePairComputed(v.zone[i], v.zone[j])) continue;
            Vec3d d = Vec3d(v.x[i]) - Vec3d(v.x[j]);
            for (int k = 0; k < 3; ++k) {
                if (v.settings.periodic[k])
                    d[k] -= v.settings.box.length[k] * std::round(d[k] / v.settings.box.length[k]);
            }
            auto it = listed.find({i, j});
            const int count = it == listed.end() ? 0 : it->second;
            if (norm2(d) < r2max && count == 0 && ++missing <= 5) {
                ADD_FAILURE() << "pair (" << i << ", " << j << ") at r = " << std::sqrt(norm2(d))
                              << " nm is in no list";
            }
            if (count > 1 && ++duplicated <= 5) {
                ADD_FAILURE() << "pair (" << i << ", " << j << ") is listed " << count << " times";
            }
        }
    }
    EXPECT_EQ(missing, 0);
    EXPECT_EQ(duplicated, 0);
}

struct Evaluated {
    std::vector<Vec3f> forces;
    ListEnergies local, nonlocal;
    PairListHost localList, nonlocalList;
    ClusterLayoutHost layout;
};

Evaluated evaluate(const RankView& v, const md::ForceField& ff) {
    Evaluated out;
    out.layout = buildLayoutReference(v.x, v.zone, v.numHome);
    out.localList = searchReference(out.layout, v.x, v.zone, false, v.settings);
    out.nonlocalList = searchReference(out.layout, v.x, v.zone, true, v.settings);
    out.forces.assign(v.x.size(), Vec3f{});
    out.local = evaluateListReference(out.layout, out.localList, v.x, v.q, v.settings, ff, out.forces);
    out.nonlocal = evaluateListReference(out.layout, out.nonlocalList, v.x, v.q, v.settings, ff, out.forces);
    return out;
}

void expectMatchesOracle(const Evaluated& e, const md::PairForces<double>& oracle, std::span<const bool> skip,
                         const std::string& what) {
    const auto diff = haloex::testing::compareForces(e.forces, oracle.forces, -1, skip);
    const std::int64_t pairs = e.local.pairsWithinCutoff + e.nonlocal.pairsWithinCutoff;
    const std::int64_t clusterPairs = static_cast<std::int64_t>(e.localList.pairs.size() + e.nonlocalList.pairs.size());
    fmt::print("{}: clusters {} (home {}), cluster pairs {} local + {} non-local, {:.1f}% of listed atom pairs "
               "within rc, {}\n",
               what, e.layout.numClusters, e.layout.numHomeClusters, e.localList.pairs.size(),
               e.nonlocalList.pairs.size(), 100.0 * pairs / std::max<double>(1.0, 64.0 * clusterPairs),
               diff.report.substr(0, diff.report.find(';')));
    EXPECT_LE(std::abs(pairs - oracle.pairsWithinCutoff),
              haloex::testing::allowedPairCountDifference(oracle.pairsWithinCutoff))
        << what << ": " << pairs << " pairs within rc in the lists, the oracle has " << oracle.pairsWithinCutoff;
    EXPECT_LE(diff.relativeNorm, kForceTolerance) << what << ": " << diff.report;
    const auto expectEnergy = [&](const char* name, double got, double expected, double magnitude) {
        EXPECT_TRUE(haloex::testing::energyAgrees(got, expected, magnitude, kEnergyTolerance))
            << what << ": " << name << " " << got << " vs oracle " << expected << " (sum of |terms| " << magnitude
            << ")";
    };
    expectEnergy("LJ", e.local.lj + e.nonlocal.lj, oracle.ljEnergy, e.local.ljMagnitude + e.nonlocal.ljMagnitude);
    expectEnergy("Coulomb", e.local.coulomb + e.nonlocal.coulomb, oracle.coulombEnergy,
                 e.local.coulombMagnitude + e.nonlocal.coulombMagnitude);
    expectEnergy("virial", e.local.virial + e.nonlocal.virial, oracle.virial,
                 e.local.virialMagnitude + e.nonlocal.virialMagnitude);
}

}  // namespace

TEST(ClusterReference, Ref3000MatchesOracle) {
    const md::ForceField ff;
    const FloatSystem s = haloex::testing::loadRef3000(ff);
    const RankView v = viewOf(s);
    const Evaluated e = evaluate(v, ff);
    expectLayoutValid(v, e.layout);
    EXPECT_TRUE(e.nonlocalList.pairs.empty()) << "no halo, yet a non-local list";
    expectMatchesOracle(e, haloex::testing::oracleSingle(s, ff), {}, s.name);
    // The fixture's own numbers (ref-3000.json, computed independently).
    EXPECT_LE(std::abs(e.local.pairsWithinCutoff - 448678), haloex::testing::allowedPairCountDifference(448678));
}

TEST(ClusterReference, LatticeSystemsMatchOracle) {
    const md::ForceField ff;
    for (int n : {1000, 4000, 12000}) {
        const FloatSystem s = haloex::testing::latticeSystem(n, 11 + n, 0.02, ff);
        const RankView v = viewOf(s);
        const Evaluated e = evaluate(v, ff);
        expectLayoutValid(v, e.layout);
        expectMatchesOracle(e, haloex::testing::oracleSingle(s, ff), {}, s.name);
    }
}

TEST(ClusterReference, UniformSystemListsEveryPairOnce) {
    const md::ForceField ff;
    const FloatSystem s = haloex::testing::uniformSystem(1500, 2.6, 5, ff);
    const RankView v = viewOf(s);
    const Evaluated e = evaluate(v, ff);
    expectLayoutValid(v, e.layout);
    expectPairsExactlyOnce(v, e.layout, e.localList, e.nonlocalList);
}

TEST(ClusterReference, EntriesAreSplitAtTheLimit) {
    const md::ForceField ff;
    const FloatSystem s = haloex::testing::latticeSystem(1000, 3, 0.05, ff);
    RankView v = viewOf(s);
    v.settings.maxJClustersPerEntry = 5;
    const ClusterLayoutHost layout = buildLayoutReference(v.x, v.zone, v.numHome);
    const PairListHost list = searchReference(layout, v.x, v.zone, false, v.settings);
    int previousEnd = 0;
    for (const ClusterEntry& e : list.entries) {
        EXPECT_EQ(e.jBegin, previousEnd);
        EXPECT_GT(e.jEnd, e.jBegin);
        EXPECT_LE(e.jEnd - e.jBegin, 5);
        previousEnd = e.jEnd;
    }
    EXPECT_EQ(previousEnd, static_cast<int>(list.pairs.size()));
}

TEST(ClusterReference, RejectsSmallPeriodicBox) {
    const md::ForceField ff;
    const FloatSystem s = haloex::testing::latticeSystem(1000, 3, 0.0, ff);  // L = 2.15 nm
    RankView v = viewOf(s);
    v.settings.rlist = 1.1;
    const ClusterLayoutHost layout = buildLayoutReference(v.x, v.zone, v.numHome);
    EXPECT_THROW(searchReference(layout, v.x, v.zone, false, v.settings), haloex::Error);
}

struct DecompositionCase {
    std::string name;
    plan::Int3 grid;
    int numAtoms;
    int alignment;
};

void PrintTo(const DecompositionCase& c, std::ostream* os) { *os << c.name; }

class ClusterReferenceRanks : public ::testing::TestWithParam<DecompositionCase> {};

TEST_P(ClusterReferenceRanks, EveryRankMatchesRankOracle) {
    const md::ForceField ff;
    const DecompositionCase& c = GetParam();
    const FloatSystem s = haloex::testing::latticeSystem(c.numAtoms, 29, 0.02, ff);
    const auto ranks = haloex::testing::decompose(s, c.grid, ff.rc, kRlist, c.alignment);
    std::int64_t totalPairs = 0;
    for (const RankSystem& r : ranks) {
        const RankView v = viewOf(r);
        const Evaluated e = evaluate(v, ff);
        expectLayoutValid(v, e.layout);
        std::vector<bool> skipStorage(r.numLocal);
        for (int i = 0; i < r.numLocal; ++i) skipStorage[i] = (r.zone[i] & plan::kPaddingMask) != 0;
        const std::unique_ptr<bool[]> skip(new bool[r.numLocal]);
        std::copy(skipStorage.begin(), skipStorage.end(), skip.get());
        expectMatchesOracle(e, haloex::testing::oracleRank(r, ff),
                            std::span<const bool>(skip.get(), static_cast<std::size_t>(r.numLocal)),
                            fmt::format("{} rank {}", c.name, r.rank));
        if (r.numLocal < 9000) expectPairsExactlyOnce(v, e.layout, e.localList, e.nonlocalList);
        totalPairs += e.local.pairsWithinCutoff + e.nonlocal.pairsWithinCutoff;
    }
    const std::int64_t single = haloex::testing::oracleSingle(s, ff).pairsWithinCutoff;
    EXPECT_LE(std::abs(totalPairs - single), haloex::testing::allowedPairCountDifference(single))
        << "pairs summed over ranks differ from the single-domain count";
}

INSTANTIATE_TEST_SUITE_P(Grids, ClusterReferenceRanks,
                         ::testing::Values(DecompositionCase{"g2x1x1", {2, 1, 1}, 6000, 1},
                                           DecompositionCase{"g2x2x1", {2, 2, 1}, 8000, 4},
                                           DecompositionCase{"g2x2x2", {2, 2, 2}, 12000, 4},
                                           DecompositionCase{"g4x1x1_2pulses", {4, 1, 1}, 3000, 1},
                                           DecompositionCase{"g1x3x2", {1, 3, 2}, 9000, 8}),
                         [](const auto& param) { return param.param.name; });

// cellOrderReference (gpu::CellOrder's order, --sort-atoms): home atoms put
// in it come out of the layout in place -- the home slots hold atoms 0, 1, 2,
// ... in turn -- on whole systems (tall columns included) and on decomposed
// ranks, whose halo atoms follow; without it they do not (the check can
// fail). A non-finite position leaves the identity; no atom is fine.
std::vector<haloex::testing::FloatSystem> cellOrderSystems() {
    const md::ForceField ff;
    std::vector<FloatSystem> systems;
    for (int n : {777, 5000})
        systems.push_back(haloex::testing::uniformSystem(n, std::cbrt(n / 100.0) + 0.4, 3 + n, ff));
    systems.push_back(haloex::testing::latticeSystem(30000, 5, 0.02, ff));
    systems.push_back(haloex::testing::uniformSystemInBox(4000, {2.0, 2.0, 10.0}, 9, ff));
    return systems;
}

void expectLayoutKeepsCellOrder(std::vector<Vec3f> x, std::vector<float> q, std::vector<plan::ZoneMask> zone,
                                int numHome, const std::string& name) {
    SCOPED_TRACE(name);
    const std::vector<int> order = cellOrderReference(std::span(x).first(static_cast<std::size_t>(numHome)));
    std::vector<int> sorted = order, identity(order.size());
    std::sort(sorted.begin(), sorted.end());
    std::iota(identity.begin(), identity.end(), 0);
    ASSERT_EQ(sorted, identity) << "not a permutation of the home atoms";
    EXPECT_NE(haloex::testing::firstHomeSlotOutOfOrder(buildLayoutReference(x, zone, numHome), numHome), "")
        << "the atoms were in cell order already: the check proves nothing";
    haloex::testing::reorderHome(order, numHome, x, q, zone);
    EXPECT_EQ(haloex::testing::firstHomeSlotOutOfOrder(buildLayoutReference(x, zone, numHome), numHome), "");
}

TEST(CellOrderReference, TheLayoutLeavesWholeSystemsInPlace) {
    for (const FloatSystem& s : cellOrderSystems()) {
        expectLayoutKeepsCellOrder(s.x, s.q, {}, static_cast<int>(s.x.size()),
                                   fmt::format("{} ({} atoms)", s.name, s.x.size()));
    }
}

TEST(CellOrderReference, TheLayoutLeavesTheHomeAtomsOfDecomposedRanksInPlace) {
    const md::ForceField ff;
    const FloatSystem system = haloex::testing::latticeSystem(12000, 21, 0.02, ff);
    for (const plan::Int3 grid : {plan::Int3{2, 1, 1}, plan::Int3{2, 2, 1}, plan::Int3{2, 2, 2}}) {
        for (const RankSystem& r : haloex::testing::decompose(system, grid, ff.rc, 1.0, 4)) {
            expectLayoutKeepsCellOrder(r.x, r.q, r.zone, r.numHome,
                                       fmt::format("grid {}x{}x{} rank {}", grid[0], grid[1], grid[2], r.rank));
        }
    }
}

TEST(CellOrderReference, ANonFinitePositionLeavesTheIdentityAndNoAtomIsFine) {
    const md::ForceField ff;
    FloatSystem s = haloex::testing::uniformSystem(1000, 2.5, 17, ff);
    s.x[500].y = std::numeric_limits<float>::quiet_NaN();
    std::vector<int> identity(s.x.size());
    std::iota(identity.begin(), identity.end(), 0);
    EXPECT_EQ(cellOrderReference(s.x), identity);
    EXPECT_TRUE(cellOrderReference({}).empty());
    EXPECT_EQ(cellOrderReference(std::vector<Vec3f>{Vec3f{1.f, 2.f, 3.f}}), std::vector<int>{0});
}

TEST(ClusterGeometry, DeviceZoneRuleEqualsPlanRule) {
    for (int a = 0; a < 256; ++a) {
        for (int b = 0; b < 256; ++b) {
            const auto za = static_cast<plan::ZoneMask>(a), zb = static_cast<plan::ZoneMask>(b);
            ASSERT_EQ(zonePairAllowed(za, zb), plan::zonePairComputed(za, zb)) << "masks " << a << ", " << b;
        }
    }
}

TEST(ClusterGeometry, ShiftIndicesAndHalfListRule) {
    const Float3 lengths{3.f, 4.f, 5.f};
    for (int s = 0; s < kNumShifts; ++s) {
        const Float3 v = shiftVector(s, lengths);
        const Float3 mirror = shiftVector(kNumShifts - 1 - s, lengths);
        EXPECT_EQ(v.x, -mirror.x);
        EXPECT_EQ(v.y, -mirror.y);
        EXPECT_EQ(v.z, -mirror.z);
        // Of a shift and its mirror, exactly one is kept for a self cluster pair.
        if (s != kCentralShift) {
            EXPECT_NE(clusterPairInHalfList(3, 3, s, true), clusterPairInHalfList(3, 3, kNumShifts - 1 - s, true));
        }
    }
    // Of (ci, cj, s) and (cj, ci, -s) exactly one is kept, and every cluster
    // keeps about half of its neighbours, the first as the last.
    for (int ci = 0; ci < 40; ++ci) {
        int kept = 0;
        for (int cj = 0; cj < 40; ++cj) {
            if (cj == ci) continue;
            for (int s : {0, kCentralShift, 20}) {
                EXPECT_NE(clusterPairInHalfList(ci, cj, s, true),
                          clusterPairInHalfList(cj, ci, kNumShifts - 1 - s, true))
                    << ci << ", " << cj << ", shift " << s;
            }
            kept += clusterPairInHalfList(ci, cj, kCentralShift, true) ? 1 : 0;
            EXPECT_TRUE(clusterPairInHalfList(ci, cj, kCentralShift, false)) << "different grids keep every pair";
            // A group of two or more keeps every candidate for its members to test.
            EXPECT_TRUE(clusterGroupInHalfList(ci, 2, cj, kCentralShift, true));
            EXPECT_EQ(clusterGroupInHalfList(ci, 1, cj, kCentralShift, true),
                      clusterPairInHalfList(ci, cj, kCentralShift, true));
        }
        EXPECT_GE(kept, 19) << "cluster " << ci;
        EXPECT_LE(kept, 20) << "cluster " << ci;
    }
    const Float3 central = shiftVector(kCentralShift, lengths);
    EXPECT_EQ(central.x, 0.f);
    EXPECT_EQ(central.y, 0.f);
    EXPECT_EQ(central.z, 0.f);
    EXPECT_FALSE(shiftAllowed(kCentralShift + 1, false, true, true));  // +x with x decomposed
    EXPECT_TRUE(shiftAllowed(kCentralShift + 3, false, true, true));   // +y
}

TEST(ClusterGeometry, CellRangeCoversRegionAndClamps) {
    // Grid origin 1.0, cells 0.5 wide, 4 cells: [1.0, 3.0).
    const IndexRange inside = cellRange(1.6f, 2.4f, 1.0f, 2.0f, 4);
    EXPECT_EQ(inside.lo, 1);
    EXPECT_EQ(inside.hi, 2);
    const IndexRange clamped = cellRange(-5.f, 10.f, 1.0f, 2.0f, 4);
    EXPECT_EQ(clamped.lo, 0);
    EXPECT_EQ(clamped.hi, 3);
    const IndexRange below = cellRange(-5.f, 0.9f, 1.0f, 2.0f, 4);
    EXPECT_GT(below.lo, below.hi) << "a region below the grid must be empty";
    const IndexRange above = cellRange(3.6f, 9.f, 1.0f, 2.0f, 4);
    EXPECT_GT(above.lo, above.hi) << "a region above the grid must be empty";
    const IndexRange edge = cellRange(3.0f, 9.f, 1.0f, 2.0f, 4);
    EXPECT_EQ(edge.lo, 3) << "atoms exactly on the upper edge live in the last cell";
    EXPECT_EQ(edge.hi, 3);
}
