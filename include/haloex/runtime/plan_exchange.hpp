#pragma once
// Builds this rank's particle halo plan over a World: the pulses run in order,
// each sending the selected atoms (positions and zone masks) to the lower
// neighbour, then the receive offsets are returned to the senders. Collective.
#include <span>
#include <vector>

#include "haloex/plan/particle_plan.hpp"
#include "haloex/runtime/world.hpp"

namespace haloex::runtime {

struct RankPlan {
    plan::ParticleHaloPlan plan;
    std::vector<Vec3d> localPositions;  // home + received (padding is NaN)
};

RankPlan buildParticlePlan(const plan::Decomposition& decomposition, std::span<const Vec3d> homePositions, World& world,
                           int alignment = 1);

}  // namespace haloex::runtime
