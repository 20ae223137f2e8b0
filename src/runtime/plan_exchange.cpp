#include "haloex/runtime/plan_exchange.hpp"

#include "haloex/core/error.hpp"

namespace haloex::runtime {

namespace {
// Apart from the pulse ids that exchanges use as tags, and within 32767, the
// only tag range MPI guarantees (MPI_TAG_UB may be as low as that).
constexpr int kTagPositions = 32700;
constexpr int kTagMasks = 32701;
constexpr int kTagOffsets = 32702;
}  // namespace

RankPlan buildParticlePlan(const plan::Decomposition& decomposition, std::span<const Vec3d> homePositions, World& world,
                           int alignment) {
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
    result.plan = builder.finish();  // first: it may append padding
    result.localPositions = builder.localPositions();
    return result;
}

}  // namespace haloex::runtime
