// End-to-end check of the plan with physics: each rank computes LJ +
// reaction-field forces on its home + halo atoms under the zone-mask rule
// (md::computeForcesRank), the reverse exchange of the reference transport
// sends halo forces home, and the result must equal the single-domain
// oracle on every atom (matched by global id), in double and in float.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "haloex/md/force_oracle.hpp"
#include "test_plan_scenario.hpp"

namespace haloex::testing {
namespace {

struct Totals {
    double lj = 0.0;
    double coulomb = 0.0;
    double virial = 0.0;
    std::int64_t pairs = 0;
};

template <class T>
struct Outcome {
    std::vector<Vec3<T>> domainForces;  // by global id, after the reverse exchange
    std::vector<Vec3<T>> singleForces;  // single-domain oracle, by global id
    Totals domain, single;
};

template <class T>
Outcome<T> computeBothWays(const Scenario& s, const md::ForceField& ff) {
    const int numAtoms = static_cast<int>(s.positions.size());
    const auto chargeOf = [&](int id) { return static_cast<T>(ff.chargeOfType(id % 2)); };
    Outcome<T> out;
    std::vector<Vec3<T>> x(numAtoms);
    std::vector<T> q(numAtoms);
    for (int id = 0; id < numAtoms; ++id) {
        x[id] = Vec3<T>(s.positions[id]);
        q[id] = chargeOf(id);
    }
    const auto single = md::computeForcesSingleDomain<T>(x, q, s.dd.box(), ff);
    out.singleForces = single.forces;
    out.single = {single.ljEnergy, single.coulombEnergy, single.virial, single.pairsWithinCutoff};

    std::array<bool, 3> periodic{};
    for (int d = 0; d < 3; ++d) periodic[d] = !s.dd.grid().decomposed(d);
    out.domainForces.assign(numAtoms, Vec3<T>{});
    std::vector<Totals> perRank(s.numRanks());
    runtime::runInProcess(s.numRanks(), [&](runtime::World& world) {
        const int r = world.rank();
        const auto& plan = s.plan(r);
        transport::ReferenceTransport reference(world);
        reference.setPlan(plan);
        const T nan = std::numeric_limits<T>::quiet_NaN();
        std::vector<Vec3<T>> local(plan.numLocal, Vec3<T>{nan, nan, nan});
        std::vector<T> charges(plan.numLocal, T(0));
        for (int i = 0; i < plan.numHome; ++i) {
            local[i] = Vec3<T>(s.homePositions[r][i]);
            charges[i] = chargeOf(s.homeIds[r][i]);
        }
        reference.forwardPositions(std::span<Vec3<T>>(local), s.dd.box());
        reference.forward(std::span<T>(charges));
        auto result = md::computeForcesRank<T>(local, charges, plan.zoneMask, s.dd.box(), periodic, ff);
        reference.reverseAdd(std::span<Vec3<T>>(result.forces));
        for (int i = 0; i < plan.numHome; ++i) out.domainForces[s.homeIds[r][i]] = result.forces[i];
        perRank[r] = {result.ljEnergy, result.coulombEnergy, result.virial, result.pairsWithinCutoff};
    });
    for (const Totals& t : perRank) {
        out.domain.lj += t.lj;
        out.domain.coulomb += t.coulomb;
        out.domain.virial += t.virial;
        out.domain.pairs += t.pairs;
    }
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

class ParticlePlanForces : public ::testing::TestWithParam<PlanCase> {};

TEST_P(ParticlePlanForces, DoubleMatchesSingleDomain) {
    const Scenario s = buildScenario(GetParam());
    const auto o = computeBothWays<double>(s, forceFieldFor(GetParam()));
    EXPECT_EQ(o.domain.pairs, o.single.pairs);
    RecordProperty("relative_force_error", fmt::format("{:.3g}", relativeForceError(o)));
    EXPECT_LE(relativeForceError(o), 1e-12);
    expectRelativelyEqual(o.domain.lj, o.single.lj, 1e-12, "LJ energy");
    expectRelativelyEqual(o.domain.coulomb, o.single.coulomb, 1e-12, "Coulomb energy");
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
    // The Coulomb sum of +q/-q pairs cancels to a small net value, so float
    // rounding of the halo positions (x + L) is measured against the size
    // of the terms summed: about f q^2 / rc per pair.
    const double termScale = static_cast<double>(o.single.pairs) * md::kCoulombFactor * ff.charge * ff.charge / ff.rc;
    EXPECT_LE(std::abs(o.domain.coulomb - o.single.coulomb), 1e-5 * std::max(std::abs(o.single.coulomb), termScale))
        << "Coulomb energy: domain " << o.domain.coulomb << ", single domain " << o.single.coulomb;
}

INSTANTIATE_TEST_SUITE_P(Decompositions, ParticlePlanForces, ::testing::ValuesIn(planCases()), caseName);

}  // namespace
}  // namespace haloex::testing
