#pragma once
// Forces of a particle-plan scenario (test_plan_scenario.hpp) computed the
// way a decomposed run does: every rank computes LJ + reaction-field forces
// on its home + halo atoms under the zone-mask rule (md::computeForcesRank),
// and the reference transport's reverse exchange sends halo forces home.
#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "haloex/md/force_oracle.hpp"
#include "test_plan_scenario.hpp"

namespace haloex::testing {

struct ForceTotals {
    double lj = 0.0;
    double coulomb = 0.0;
    double virial = 0.0;
    std::int64_t pairs = 0;
};

// Atoms alternate between the force field's two types (charges +q, -q).
template <class T>
T chargeOfAtom(const md::ForceField& ff, int id) {
    return static_cast<T>(ff.chargeOfType(id % 2));
}

template <class T>
struct DomainForces {
    std::vector<Vec3<T>> byId;  // after the reverse exchange, by global id
    ForceTotals totals;         // summed over ranks
};

template <class T>
DomainForces<T> forcesOverRanks(const Scenario& s, const md::ForceField& ff) {
    DomainForces<T> out;
    out.byId.assign(s.positions.size(), Vec3<T>{});
    std::array<bool, 3> periodic{};
    for (int d = 0; d < 3; ++d) periodic[d] = !s.dd.grid().decomposed(d);
    std::vector<ForceTotals> perRank(s.numRanks());
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
            charges[i] = chargeOfAtom<T>(ff, s.homeIds[r][i]);
        }
        reference.forwardPositions(std::span<Vec3<T>>(local), s.dd.box());
        reference.forward(std::span<T>(charges));
        auto result = md::computeForcesRank<T>(local, charges, plan.zoneMask, s.dd.box(), periodic, ff);
        reference.reverseAdd(std::span<Vec3<T>>(result.forces));
        for (int i = 0; i < plan.numHome; ++i) out.byId[s.homeIds[r][i]] = result.forces[i];
        perRank[r] = {result.ljEnergy, result.coulombEnergy, result.virial, result.pairsWithinCutoff};
    });
    for (const ForceTotals& t : perRank) {
        out.totals.lj += t.lj;
        out.totals.coulomb += t.coulomb;
        out.totals.virial += t.virial;
        out.totals.pairs += t.pairs;
    }
    return out;
}

}  // namespace haloex::testing
