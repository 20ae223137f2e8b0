#pragma once
/// @file
/// Builds this rank's particle halo plan over a World: the pulses run in order,
/// each sending the selected atoms (positions and zone masks) to the lower
/// neighbour, then the receive offsets are returned to the senders. Collective.
#include <span>
#include <vector>

#include "haloex/plan/particle_plan.hpp"
#include "haloex/runtime/world.hpp"

namespace haloex::runtime {

/// What buildParticlePlan gives a rank.
struct RankPlan {
    plan::ParticleHaloPlan plan;        ///< this rank's halo plan
    std::vector<Vec3d> localPositions;  ///< home + received (padding is NaN)
};

/// Collective: this rank's plan for its home particles `homePositions`
/// (inside its cell of `decomposition`), and its local positions (home, then
/// what each pulse received, shifted). `alignment`: each pulse's receive slots
/// start at a multiple of it (the fused kernels' bulk copies want 4).
RankPlan buildParticlePlan(const plan::Decomposition& decomposition, std::span<const Vec3d> homePositions, World& world,
                           int alignment = 1);

}  // namespace haloex::runtime
