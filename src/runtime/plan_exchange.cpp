#include "haloex/runtime/plan_exchange.hpp"

#include "haloex/core/error.hpp"

namespace haloex::runtime {

namespace {
constexpr int kTagPositions = 1 << 20;
constexpr int kTagMasks = (1 << 20) + 1;
constexpr int kTagOffsets = (1 << 20) + 2;
}  // namespace

RankPlan buildParticlePlan(const plan::Decomposition& decomposition, std::span<const Vec3d> homePositions,
                           World& world, int alignment) {
    plan::requireGridMatchesRanks(decomposition.grid(), world.size());
    plan::ParticlePlanBuilder builder(decomposition, world.rank(), homePositions, alignment);
    const auto& grid = decomposition.grid();
    for (int p = 0; p < builder.numPulses(); ++p) {
        const int d = decomposition.pulseOrder()[p].dim;
        const int lower = grid.neighbour(world.rank(), d, -1);
        const int upper = grid.neighbour(world.rank(), d, +1);
        const plan::OutgoingAtoms out = builder.selectSend(p);
        const auto positions = world.sendRecv(out.positions, lower, upper, kTagPositions);
        const auto masks = world.sendRecv(out.masks, lower, upper, kTagMasks);
        builder.receive(p, positions, masks);
    }
    // Tell each sender where its data lands here.
    for (int p = 0; p < builder.numPulses(); ++p) {
        const int d = decomposition.pulseOrder()[p].dim;
        const int lower = grid.neighbour(world.rank(), d, -1);
        const int upper = grid.neighbour(world.rank(), d, +1);
        const std::vector<int> mine{builder.recvOffset(p)};
        const auto theirs = world.sendRecv(mine, upper, lower, kTagOffsets);
        HALOEX_ASSERT(theirs.size() == 1, "one receive offset per pulse");
        builder.setRemoteRecvOffset(p, theirs[0]);
    }
    RankPlan result;
    result.localPositions = builder.localPositions();
    result.plan = builder.finish();
    return result;
}

}  // namespace haloex::runtime
