// Corner and edge pruning (DecompositionSpec::pruneCorners, docs/planner.md)
// against the unpruned plan of the same atoms, on every decomposition of the
// plan property suite (which checks the pruned plans' own properties: the
// halo region, every pair within rlist computed once, both builders alike):
// the pruned halo is a subset of the unpruned one, strictly smaller where
// two or more dimensions are decomposed and the very same plan where one is;
// home atoms are never pruned; and forces reduced to their owners equal the
// unpruned plan's within the rounding of a reordered sum.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>
#include <vector>

#include "plan_forces.hpp"

namespace haloex::testing {
namespace {

using plan::Int3;

std::vector<PlanCase> prunedCases() {
    std::vector<PlanCase> cases;
    for (const PlanCase& c : planCases()) {
        if (c.pruneCorners) cases.push_back(c);
    }
    return cases;
}

int decomposedDims(const plan::Decomposition& dd) {
    int n = 0;
    for (int d = 0; d < 3; ++d) n += dd.grid().decomposed(d) ? 1 : 0;
    return n;
}

int totalHalo(const Scenario& s) {
    int n = 0;
    for (int r = 0; r < s.numRanks(); ++r) n += s.plan(r).numHalo();
    return n;
}

class HaloPruning : public ::testing::TestWithParam<PlanCase> {
protected:
    void SetUp() override {
        PlanCase c = GetParam();
        pruned_ = std::make_unique<Scenario>(buildScenario(c));
        c.pruneCorners = false;
        unpruned_ = std::make_unique<Scenario>(buildScenario(c));
        ASSERT_TRUE(pruned_->dd.prunesCorners());
        ASSERT_FALSE(unpruned_->dd.prunesCorners());
        ASSERT_EQ(pruned_->homeIds, unpruned_->homeIds) << "the same atoms on the same ranks";
    }
    const Scenario& pruned() const { return *pruned_; }
    const Scenario& unpruned() const { return *unpruned_; }

private:
    std::unique_ptr<Scenario> pruned_, unpruned_;
};

using Image = std::tuple<int, int, int, int>;  // global id, shift x, y, z

std::set<Image> haloImages(const Scenario& s, int r) {
    std::set<Image> images;
    const auto& plan = s.plan(r);
    for (int i = plan.numHome; i < plan.numLocal; ++i) {
        if (plan.zoneMask[i] & plan::kPaddingMask) continue;
        const int id = s.localIds[r][i];
        const Int3 k = imageShift(s.local(r)[i], s.positions[id], s.dd.box().length);
        images.emplace(id, k[0], k[1], k[2]);
    }
    return images;
}

TEST_P(HaloPruning, HaloIsASubsetStrictlySmallerWhereCornersExistAndUnchangedInOneDimension) {
    for (int r = 0; r < pruned().numRanks(); ++r) {
        const std::set<Image> kept = haloImages(pruned(), r);
        const std::set<Image> all = haloImages(unpruned(), r);
        EXPECT_TRUE(std::includes(all.begin(), all.end(), kept.begin(), kept.end()))
            << "rank " << r << " received an atom image that the unpruned plan does not send";
    }
    const int before = totalHalo(unpruned()), after = totalHalo(pruned());
    RecordProperty("halo_atoms_unpruned", before);
    RecordProperty("halo_atoms_pruned", after);
    if (decomposedDims(pruned().dd) >= 2) {
        EXPECT_LT(after, before) << "corner and edge pruning removed no halo atom";
        return;
    }
    // One decomposed dimension: no atom arrives through two, nothing is pruned.
    EXPECT_EQ(after, before);
    for (int r = 0; r < pruned().numRanks(); ++r) {
        SCOPED_TRACE(::testing::Message() << "rank " << r);
        const auto& a = pruned().plan(r);
        const auto& b = unpruned().plan(r);
        EXPECT_EQ(a.numLocal, b.numLocal);
        EXPECT_EQ(a.zoneMask, b.zoneMask);
        ASSERT_EQ(a.pulses.size(), b.pulses.size());
        for (std::size_t p = 0; p < a.pulses.size(); ++p) {
            EXPECT_EQ(a.pulses[p].sendIndices, b.pulses[p].sendIndices) << "pulse " << p;
            EXPECT_EQ(a.pulses[p].recvOffset, b.pulses[p].recvOffset) << "pulse " << p;
        }
    }
}

// Pruning tests only atoms that arrived through another dimension, so each
// pulse's independent entries (home atoms) stay as they were, and the first
// dimension's pulses, which forward nothing of another, are unchanged.
TEST_P(HaloPruning, HomeAtomsAndTheFirstDimensionAreNeverPruned) {
    const int firstDim = pruned().dd.totalPulses() > 0 ? pruned().dd.pulseOrder().front().dim : -1;
    for (int r = 0; r < pruned().numRanks(); ++r) {
        SCOPED_TRACE(::testing::Message() << "rank " << r);
        const auto& a = pruned().plan(r);
        const auto& b = unpruned().plan(r);
        ASSERT_EQ(a.pulses.size(), b.pulses.size());
        for (std::size_t p = 0; p < a.pulses.size(); ++p) {
            const plan::Pulse& kept = a.pulses[p];
            const plan::Pulse& all = b.pulses[p];
            EXPECT_EQ(kept.numIndependent, all.numIndependent) << "pulse " << p;
            EXPECT_TRUE(std::equal(kept.sendIndices.begin(), kept.sendIndices.begin() + kept.numIndependent,
                                   all.sendIndices.begin()))
                << "pulse " << p << " sends other home atoms";
            EXPECT_LE(kept.sendCount(), all.sendCount()) << "pulse " << p;
            if (kept.dim == firstDim) {
                EXPECT_EQ(kept.sendIndices, all.sendIndices) << "pulse " << p;
            }
        }
    }
}

// What bounds the difference of two sums of the same n terms in different
// orders: each is within gamma_n * sum |t_k| of the exact sum (Higham,
// Accuracy and Stability of Numerical Algorithms, eq. 4.4: a summation tree
// of depth h gives gamma_h; the sums here have at most n - 1 inexact
// additions, the reverse exchange's additions of an image's zero force being
// exact). The pair forces themselves are bit for bit the same in both plans:
// each pair is computed on the same rank from the same halo position (the
// same image, shifted along the same pulses), and visiting it as (j, i)
// instead of (i, j) only negates it exactly (the charges are +q and -q, so
// the charge product does not depend on the order). So per atom and component
//   |F_pruned - F_unpruned| <= 2 gamma_n sum_k |f_k|,  gamma_n = n u / (1 - n u),
// u the unit roundoff of T, f_k the atom's n pair forces within rc. |f_k| is
// bounded by the magnitudes of its LJ and Coulomb parts, in double here; the
// factor 1.01 covers those being evaluated in T in the run (positions rounded
// to float move a pair force by far less than 1 %).
struct PairForceBound {
    std::vector<int> pairs;      // per atom: pair forces summed
    std::vector<double> absSum;  // per atom: sum of |f_k| (upper bound)
};

PairForceBound pairForceBound(const Scenario& s, const md::ForceField& ff) {
    const int n = static_cast<int>(s.positions.size());
    PairForceBound b{std::vector<int>(n, 0), std::vector<double>(n, 0.0)};
    const Vec3d L = s.dd.box().length;
    const double rc2 = ff.rc * ff.rc;
    for (int i = 0; i < n; ++i) {
        for (int j = i + 1; j < n; ++j) {
            const double r2 = minimumImageDistance2(s.positions[i], s.positions[j], L);
            if (!(r2 < rc2)) continue;
            const double rinv = 1.0 / std::sqrt(r2);
            const double rinv2 = rinv * rinv, rinv6 = rinv2 * rinv2 * rinv2;
            const double qq = std::abs(md::kCoulombFactor * ff.chargeOfType(i % 2) * ff.chargeOfType(j % 2));
            const double lj = (12.0 * ff.c12() * rinv6 * rinv6 + 6.0 * ff.c6() * rinv6) * rinv2;
            const double coulomb = qq * (rinv * rinv2 + 2.0 * ff.krf());
            const double magnitude = (lj + coulomb) * std::sqrt(r2);
            for (int a : {i, j}) {
                ++b.pairs[a];
                b.absSum[a] += magnitude;
            }
        }
    }
    return b;
}

template <class T>
void expectForcesEqualWithinSummationRounding(const Scenario& pruned, const Scenario& unpruned) {
    md::ForceField ff;
    ff.rc = pruned.c.rc;
    const DomainForces<T> a = forcesOverRanks<T>(pruned, ff);
    const DomainForces<T> b = forcesOverRanks<T>(unpruned, ff);
    EXPECT_EQ(a.totals.pairs, b.totals.pairs);
    const PairForceBound bound = pairForceBound(pruned, ff);
    const double u = std::numeric_limits<T>::epsilon() / 2.0;
    int beyond = 0, differing = 0;
    double worst = 0.0;  // largest |difference| / tolerance
    for (std::size_t id = 0; id < a.byId.size(); ++id) {
        const double nu = bound.pairs[id] * u;
        const double tolerance = 2.0 * nu / (1.0 - nu) * bound.absSum[id] * 1.01;
        for (int d = 0; d < 3; ++d) {
            const double diff = std::abs(static_cast<double>(a.byId[id][d]) - static_cast<double>(b.byId[id][d]));
            if (diff == 0.0) continue;
            ++differing;
            worst = std::max(worst, diff / tolerance);
            if (diff > tolerance && ++beyond <= 5) {
                ADD_FAILURE() << "atom " << id << " component " << d << ": pruned " << a.byId[id][d] << ", unpruned "
                              << b.byId[id][d] << ", tolerance " << tolerance << " (" << bound.pairs[id]
                              << " pair forces)";
            }
        }
    }
    EXPECT_EQ(beyond, 0);
    ::testing::Test::RecordProperty("components_differing", differing);
    ::testing::Test::RecordProperty("worst_difference_over_tolerance", fmt::format("{:.3g}", worst));
}

TEST_P(HaloPruning, FloatForcesEqualTheUnprunedPlansWithinSummationRounding) {
    expectForcesEqualWithinSummationRounding<float>(pruned(), unpruned());
}

TEST_P(HaloPruning, DoubleForcesEqualTheUnprunedPlansWithinSummationRounding) {
    expectForcesEqualWithinSummationRounding<double>(pruned(), unpruned());
}

INSTANTIATE_TEST_SUITE_P(Decompositions, HaloPruning, ::testing::ValuesIn(prunedCases()), caseName);

}  // namespace
}  // namespace haloex::testing
