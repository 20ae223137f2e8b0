// End-to-end check of the plan with physics: each rank computes LJ +
// reaction-field forces on its home + halo atoms under the zone-mask rule
// (md::computeForcesRank), the reverse exchange of the reference transport
// sends halo forces home, and the result must equal the single-domain
// oracle on every atom (matched by global id), in double and in float.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "haloex/md/force_oracle.hpp"
#include "plan_forces.hpp"

namespace haloex::testing {
namespace {

template <class T>
struct Outcome {
    std::vector<Vec3<T>> domainForces;  // by global id, after the reverse exchange
    std::vector<Vec3<T>> singleForces;  // single-domain oracle, by global id
    ForceTotals domain, single;
};

template <class T>
Outcome<T> computeBothWays(const Scenario& s, const md::ForceField& ff) {
    const int numAtoms = static_cast<int>(s.positions.size());
    Outcome<T> out;
    std::vector<Vec3<T>> x(numAtoms);
    std::vector<T> q(numAtoms);
    for (int id = 0; id < numAtoms; ++id) {
        x[id] = Vec3<T>(s.positions[id]);
        q[id] = chargeOfAtom<T>(ff, id);
    }
    const auto single = md::computeForcesSingleDomain<T>(x, q, s.dd.box(), ff);
    out.singleForces = single.forces;
    out.single = {single.ljEnergy, single.coulombEnergy, single.virial, single.pairsWithinCutoff};
    DomainForces<T> domain = forcesOverRanks<T>(s, ff);
    out.domainForces = std::move(domain.byId);
    out.domain = domain.totals;
    return out;
}

template <class T>
double relativeForceError(const Outcome<T>& o) {
    double diff2 = 0.0, ref2 = 0.0;
    for (std::size_t id = 0; id < o.singleForces.size(); ++id) {
        for (int d = 0; d < 3; ++d) {
            const double a = static_cast<double>(o.domainForces[id][d]);
            const double b = static_cast<double>(o.singleForces[id][d]);
            diff2 += (a - b) * (a - b);
            ref2 += b * b;
        }
    }
    return ref2 > 0.0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
}

void expectRelativelyEqual(double a, double b, double tolerance, const char* what) {
    EXPECT_LE(std::abs(a - b), tolerance * std::abs(b)) << what << ": domain " << a << ", single domain " << b;
}

md::ForceField forceFieldFor(const PlanCase& c) {
    md::ForceField ff;
    ff.rc = c.rc;
    return ff;
}

// The Coulomb sum of +q/-q pairs cancels to a small net value, so rounding
// (of the halo positions x + L in float; of the order in which ranks and
// their cell grids visit the pairs in both) is measured against the size of
// the terms summed: about f q^2 / rc per pair.
template <class T>
void expectCoulombEqual(const Outcome<T>& o, const md::ForceField& ff, double tolerance) {
    const double termScale = static_cast<double>(o.single.pairs) * md::kCoulombFactor * ff.charge * ff.charge / ff.rc;
    EXPECT_LE(std::abs(o.domain.coulomb - o.single.coulomb),
              tolerance * std::max(std::abs(o.single.coulomb), termScale))
        << "Coulomb energy: domain " << o.domain.coulomb << ", single domain " << o.single.coulomb;
}

class ParticlePlanForces : public ::testing::TestWithParam<PlanCase> {};

TEST_P(ParticlePlanForces, DoubleMatchesSingleDomain) {
    const Scenario s = buildScenario(GetParam());
    const md::ForceField ff = forceFieldFor(GetParam());
    const auto o = computeBothWays<double>(s, ff);
    EXPECT_EQ(o.domain.pairs, o.single.pairs);
    RecordProperty("relative_force_error", fmt::format("{:.3g}", relativeForceError(o)));
    EXPECT_LE(relativeForceError(o), 1e-12);
    expectRelativelyEqual(o.domain.lj, o.single.lj, 1e-12, "LJ energy");
    // About 90 unit roundoffs of the terms' size (the float check allows 170).
    expectCoulombEqual(o, ff, 1e-14);
    expectRelativelyEqual(o.domain.virial, o.single.virial, 1e-12, "virial");
    if (s.positions.size() > 100) {
        EXPECT_GT(o.single.pairs, 0);
    }
}

TEST_P(ParticlePlanForces, FloatMatchesSingleDomain) {
    const Scenario s = buildScenario(GetParam());
    const auto o = computeBothWays<float>(s, forceFieldFor(GetParam()));
    const md::ForceField ff = forceFieldFor(GetParam());
    RecordProperty("relative_force_error", fmt::format("{:.3g}", relativeForceError(o)));
    EXPECT_LE(relativeForceError(o), 1e-5);
    EXPECT_EQ(o.domain.pairs, o.single.pairs);
    expectRelativelyEqual(o.domain.lj, o.single.lj, 1e-5, "LJ energy");
    expectCoulombEqual(o, ff, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Decompositions, ParticlePlanForces, ::testing::ValuesIn(planCases()), caseName);

}  // namespace
}  // namespace haloex::testing
