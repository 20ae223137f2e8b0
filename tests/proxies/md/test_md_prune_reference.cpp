// Dynamic pruning of the cluster-pair list, checked on the CPU through its
// reference (pruneReference in cluster_reference.hpp, the decision the GPU
// prune kernel makes bit for bit): a pair is kept iff one of its unmasked
// atom pairs is within rlistInner; no pair within rc is ever dropped (the
// inner list gives the very same forces and energies as the outer one at
// the positions it was pruned with); entries outside the pruned range are
// untouched. Also the Nonbonded option checks, which refuse bad pruning
// settings before touching a GPU (so this runs without one).
#include <gtest/gtest.h>

#include <cmath>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/md/gpu/cluster_reference.hpp"
#include "haloex/md/gpu/nonbonded.hpp"
#include "md_test_support.hpp"

using namespace haloex;
using namespace haloex::md::gpu;
using haloex::testing::FloatSystem;
using haloex::testing::RankSystem;

namespace {

constexpr double kRlist = 1.0;

struct Case {
    std::string name;
    std::vector<Vec3f> x;
    std::vector<plan::ZoneMask> zone;  // empty: all home
    int numHome = 0;
    SearchSettings settings;
};

Case caseOf(const FloatSystem& s) {
    return {s.name, s.x, {}, static_cast<int>(s.x.size()), {s.box, {true, true, true}, kRlist, 32}};
}
Case caseOf(const RankSystem& r, const std::string& name) {
    return {fmt::format("{} rank {}", name, r.rank), r.x, r.zone, r.numHome, {r.box, r.periodic, kRlist, 32}};
}

bool maskBit(const ClusterPair& p, int bit) {
    return ((bit < 32 ? p.maskLo >> bit : p.maskHi >> (bit - 32)) & 1u) != 0;
}

bool samePair(const ClusterPair& a, const ClusterPair& b) {
    return a.cj == b.cj && a.shift == b.shift && a.maskLo == b.maskLo && a.maskHi == b.maskHi;
}

// Smallest float (atomDistance2) and double squared distance over the
// unmasked atom pairs of cluster pair p of entry e.
struct PairDistance {
    float float2 = INFINITY;
    double double2 = INFINITY;
};
PairDistance closest(const Case& c, const ClusterLayoutHost& layout, const ClusterEntry& e, const ClusterPair& p) {
    const Float3 sv = shiftVector(p.shift, boxLengthsF(c.settings.box));
    PairDistance d;
    for (int a = 0; a < kClusterSize; ++a) {
        for (int b = 0; b < kClusterSize; ++b) {
            if (!maskBit(p, a * kClusterSize + b)) continue;
            const Vec3f xi = c.x[layout.atomOfSlot[e.ci * kClusterSize + a]];
            const Vec3f xj = c.x[layout.atomOfSlot[p.cj * kClusterSize + b]];
            d.float2 = std::min(d.float2, atomDistance2({xi.x, xi.y, xi.z}, {xj.x, xj.y, xj.z}, sv));
            const Vec3d dd = Vec3d(xi) - (Vec3d(xj) + Vec3d{sv.x, sv.y, sv.z});
            d.double2 = std::min(d.double2, norm2(dd));
        }
    }
    return d;
}

// Entry by entry: the inner list keeps exactly the outer pairs with an atom
// pair within rlistInner, in their order. Returns the number kept.
std::int64_t expectPrunedExactly(const Case& c, const ClusterLayoutHost& layout, const PairListHost& outer,
                                 const PairListHost& inner, double rlistInner) {
    EXPECT_EQ(inner.entries.size(), outer.entries.size()) << c.name;
    if (inner.entries.size() != outer.entries.size()) return 0;
    const float r2 = rlistSquared(rlistInner);
    const double below = (rlistInner - 1e-4) * (rlistInner - 1e-4), above = (rlistInner + 1e-4) * (rlistInner + 1e-4);
    int failures = 0;
    for (std::size_t e = 0; e < outer.entries.size() && failures < 5; ++e) {
        const ClusterEntry& o = outer.entries[e];
        const ClusterEntry& i = inner.entries[e];
        EXPECT_EQ(i.ci, o.ci) << c.name << " entry " << e;
        int k = i.jBegin;
        for (int j = o.jBegin; j < o.jEnd; ++j) {
            const ClusterPair& p = outer.pairs[j];
            const PairDistance d = closest(c, layout, o, p);
            const bool keep = d.float2 < r2;
            // The float decision is the double one away from the boundary.
            if ((d.double2 < below && !keep) || (d.double2 > above && keep)) {
                ++failures;
                ADD_FAILURE() << c.name << " entry " << e << " pair " << j << ": closest atom pair at "
                              << std::sqrt(d.double2) << " nm but kept = " << keep;
            }
            const bool kept = k < i.jEnd && samePair(inner.pairs[k], p);
            if (kept != keep) {
                ++failures;
                ADD_FAILURE() << c.name << " entry " << e << " (ci " << o.ci << "): cluster pair cj " << p.cj
                              << " shift " << p.shift << " with closest atom pair at " << std::sqrt(d.double2)
                              << " nm is " << (kept ? "kept" : "dropped") << " at rlistInner " << rlistInner;
                break;
            }
            if (kept) ++k;
        }
        EXPECT_EQ(k, i.jEnd) << c.name << " entry " << e << ": the inner list holds pairs the outer one lacks";
    }
    return static_cast<std::int64_t>(inner.pairs.size());
}

void checkCase(const Case& c, const md::ForceField& ff) {
    const ClusterLayoutHost layout = buildLayoutReference(c.x, c.zone, c.numHome);
    std::vector<float> q(c.x.size(), 0.1f);
    for (std::size_t i = 0; i < q.size(); i += 2) q[i] = -0.1f;
    for (bool nonlocal : {false, true}) {
        const PairListHost outer = searchReference(layout, c.x, c.zone, nonlocal, c.settings);
        const std::string what = fmt::format("{} ({})", c.name, nonlocal ? "non-local" : "local");
        std::vector<Vec3f> fOuter(c.x.size(), Vec3f{});
        const ListEnergies eOuter = evaluateListReference(layout, outer, c.x, q, c.settings, ff, fOuter);
        for (double rlistInner : {ff.rc, 0.93}) {
            SCOPED_TRACE(fmt::format("{}, rlistInner {}", what, rlistInner));
            const PairListHost inner = pruneReference(layout, outer, c.x, c.settings, rlistInner);
            const Case view{what, c.x, c.zone, c.numHome, c.settings};
            const std::int64_t kept = expectPrunedExactly(view, layout, outer, inner, rlistInner);
            if (!outer.pairs.empty()) {
                EXPECT_LT(kept, static_cast<std::int64_t>(outer.pairs.size())) << what << ": pruning dropped nothing";
            }
            // Nothing within rc dropped: the same pairs interact, in the same
            // order, so forces and energies are bit for bit the outer list's
            // (a dropped pair only ever added zero).
            std::vector<Vec3f> fInner(c.x.size(), Vec3f{});
            const ListEnergies eInner = evaluateListReference(layout, inner, c.x, q, c.settings, ff, fInner);
            EXPECT_EQ(eInner.pairsWithinCutoff, eOuter.pairsWithinCutoff) << what;
            EXPECT_EQ(eInner.lj, eOuter.lj) << what;
            EXPECT_EQ(eInner.coulomb, eOuter.coulomb) << what;
            int differ = 0;
            for (std::size_t i = 0; i < fInner.size(); ++i) {
                const bool same =
                    fInner[i].x == fOuter[i].x && fInner[i].y == fOuter[i].y && fInner[i].z == fOuter[i].z;
                if (!same && ++differ <= 3) ADD_FAILURE() << what << ": force on local atom " << i << " changed";
            }
            fmt::print("{}: rlistInner {} keeps {} of {} cluster pairs ({:.1f}%)\n", what, rlistInner, kept,
                       outer.pairs.size(), 100.0 * kept / std::max<double>(1.0, outer.pairs.size()));
        }
        // At rlist at the build's positions pruning keeps everything: the
        // search kept a pair for the same test.
        const PairListHost same = pruneReference(layout, outer, c.x, c.settings, kRlist);
        EXPECT_EQ(same.pairs.size(), outer.pairs.size()) << what;
    }
}

}  // namespace

TEST(PruneReference, Ref3000KeepsExactlyThePairsWithinRlistInner) {
    const md::ForceField ff;
    checkCase(caseOf(haloex::testing::loadRef3000(ff)), ff);
}

TEST(PruneReference, RanksOfADecompositionKeepExactlyThePairsWithinRlistInner) {
    const md::ForceField ff;
    const FloatSystem s = haloex::testing::latticeSystem(8000, 31, 0.02, ff);
    const auto ranks = haloex::testing::decompose(s, {2, 2, 1}, ff.rc, kRlist, 4);
    checkCase(caseOf(ranks[1], "g2x2x1"), ff);
}

// After the atoms moved: a pair is kept for the new positions, and the
// entries outside the pruned range keep all their pairs (rolling parts).
TEST(PruneReference, PrunesOnlyTheGivenEntriesWithTheGivenPositions) {
    const md::ForceField ff;
    const FloatSystem s = haloex::testing::latticeSystem(4000, 3, 0.02, ff);
    const Case c = caseOf(s);
    const ClusterLayoutHost layout = buildLayoutReference(c.x, c.zone, c.numHome);
    const PairListHost outer = searchReference(layout, c.x, c.zone, false, c.settings);
    std::vector<Vec3f> moved = c.x;
    for (std::size_t i = 0; i < moved.size(); ++i) {
        const float d = 0.01f * static_cast<float>(static_cast<int>(i % 7) - 3);
        moved[i] += Vec3f{d, -d, 0.5f * d};
    }
    const int numEntries = static_cast<int>(outer.entries.size());
    const int parts = 4;
    for (int k = 0; k < parts; ++k) {
        const int begin = prunePartBegin(numEntries, parts, k), end = prunePartBegin(numEntries, parts, k + 1);
        const PairListHost inner = pruneReference(layout, outer, moved, c.settings, ff.rc, begin, end);
        const PairListHost all = pruneReference(layout, outer, moved, c.settings, ff.rc);
        ASSERT_EQ(inner.entries.size(), outer.entries.size());
        for (int e = 0; e < numEntries; ++e) {
            const PairListHost& expected = (e >= begin && e < end) ? all : outer;
            const ClusterEntry& a = inner.entries[e];
            const ClusterEntry& b = expected.entries[e];
            ASSERT_EQ(a.jEnd - a.jBegin, b.jEnd - b.jBegin) << "part " << k << " entry " << e;
            for (int j = 0; j < a.jEnd - a.jBegin; ++j) {
                ASSERT_TRUE(samePair(inner.pairs[a.jBegin + j], expected.pairs[b.jBegin + j]))
                    << "part " << k << " entry " << e << " pair " << j;
            }
        }
    }
    // The parts tile the entries.
    EXPECT_EQ(prunePartBegin(numEntries, parts, 0), 0);
    EXPECT_EQ(prunePartBegin(numEntries, parts, parts), numEntries);
    const Case movedCase{"moved", moved, {}, c.numHome, c.settings};
    expectPrunedExactly(movedCase, layout, outer, pruneReference(layout, outer, moved, c.settings, 0.95), 0.95);
}

// Bad pruning settings are refused before any GPU work.
TEST(PruneReference, NonbondedRefusesBadPruningOptions) {
    const md::ForceField ff;  // rc 0.9
    const auto message = [&](double rlistInner, int parts) -> std::string {
        NonbondedOptions o;
        o.rlistInner = rlistInner;
        o.pruneParts = parts;
        try {
            Nonbonded nb(ff, kRlist, o);
        } catch (const haloex::Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidInput) << e.what();
            return e.what();
        }
        return {};
    };
    EXPECT_NE(message(0.85, 4).find("rlistInner = 0.85 nm must lie between rc = 0.9 nm and rlist = 1 nm"),
              std::string::npos)
        << message(0.85, 4);
    EXPECT_NE(message(1.05, 4).find("rlistInner = 1.05"), std::string::npos) << message(1.05, 4);
    EXPECT_NE(message(-1.0, 4).find("rlistInner = -1"), std::string::npos) << message(-1.0, 4);
    EXPECT_NE(message(NAN, 4).find("rlistInner"), std::string::npos);
    EXPECT_NE(message(0.95, 0).find("pruneParts = 0 must be at least 1"), std::string::npos) << message(0.95, 0);
    EXPECT_NE(message(0.95, -2).find("pruneParts = -2"), std::string::npos);
}
