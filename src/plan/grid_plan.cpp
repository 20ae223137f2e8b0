#include "haloex/plan/grid_plan.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "haloex/core/error.hpp"

namespace haloex::plan {
namespace {

constexpr const char* kDimName = "xyz";

struct Range3 {
    Int3 lo{0, 0, 0};
    Int3 hi{0, 0, 0};  // exclusive
};

template <class F>
void forEachCell(const Range3& r, F&& f) {
    for (int k = r.lo[2]; k < r.hi[2]; ++k)
        for (int j = r.lo[1]; j < r.hi[1]; ++j)
            for (int i = r.lo[0]; i < r.hi[0]; ++i) f(Int3{i, j, k});
}

// A rank's pulses with send cells in their final order, before the receive
// placement (which needs the peers' orders) is known.
struct Skeleton {
    GridHaloPlan plan;
    std::vector<std::vector<Int3>> sendCells;  // interior coordinates, per pulse
};

Skeleton buildSkeleton(const GridSpec& spec, int rank) {
    const RankGrid& grid = spec.grid;
    Skeleton s;
    GridHaloPlan& plan = s.plan;
    plan.rank = rank;
    plan.coord = grid.coordOf(rank);
    for (int d = 0; d < 3; ++d) {
        plan.interior[d] = blockExtent(spec.cells[d], grid.dim(d), plan.coord[d]);
        plan.origin[d] = blockStart(spec.cells[d], grid.dim(d), plan.coord[d]);
        plan.halo[d] = spec.cells[d] > 1 ? spec.haloWidth : 0;
        plan.allocated[d] = plan.interior[d] + 2 * plan.halo[d];
    }
    plan.receivedInPulse.assign(plan.numLocal(), -1);
    plan.edgesAndCorners = spec.edgesAndCorners;
    std::array<bool, 3> haloFilled{false, false, false};
    for (int d : spec.dimOrder) {
        if (plan.halo[d] == 0) continue;
        const int h = plan.halo[d];
        const int c = plan.coord[d];
        const int n = grid.dim(d);
        const bool hasLower = spec.periodic[d] || c > 0;
        const bool hasUpper = spec.periodic[d] || c < n - 1;
        // Extents in the other dimensions: halos filled earlier are forwarded
        // (faces only: never, so the pulses stay independent).
        Range3 base;
        for (int e = 0; e < 3; ++e) {
            const bool forward = spec.edgesAndCorners && haloFilled[e];
            base.lo[e] = forward ? -plan.halo[e] : 0;
            base.hi[e] = plan.interior[e] + (forward ? plan.halo[e] : 0);
        }
        for (Direction dir : {Direction::Down, Direction::Up}) {
            Pulse pulse;
            pulse.id = static_cast<int>(plan.pulses.size());
            pulse.dim = d;
            pulse.stage = 0;
            pulse.direction = dir;
            const bool down = dir == Direction::Down;
            pulse.sendRank = (down ? hasLower : hasUpper) ? grid.neighbour(rank, d, down ? -1 : +1) : -1;
            pulse.recvRank = (down ? hasUpper : hasLower) ? grid.neighbour(rank, d, down ? +1 : -1) : -1;
            std::vector<Int3> cells;
            if (pulse.sendRank >= 0) {
                Range3 send = base;
                send.lo[d] = down ? 0 : plan.interior[d] - h;
                send.hi[d] = down ? h : plan.interior[d];
                forEachCell(send, [&](const Int3& x) { cells.push_back(x); });
                // Own data first: the dependency split needs it.
                std::stable_partition(cells.begin(), cells.end(), [&](const Int3& x) {
                    return plan.receivedInPulse[plan.localIndex(x[0], x[1], x[2])] < 0;
                });
                for (const Int3& x : cells) pulse.sendIndices.push_back(plan.localIndex(x[0], x[1], x[2]));
            }
            if (pulse.recvRank >= 0) {
                Range3 recv = base;
                recv.lo[d] = down ? plan.interior[d] : -h;
                recv.hi[d] = down ? plan.interior[d] + h : 0;
                int count = 0;
                forEachCell(recv, [&](const Int3& x) {
                    plan.receivedInPulse[plan.localIndex(x[0], x[1], x[2])] = pulse.id;
                    ++count;
                });
                pulse.recvCount = count;
                pulse.recvCapacity = count;
            }
            s.sendCells.push_back(std::move(cells));
            plan.pulses.push_back(std::move(pulse));
        }
        haloFilled[d] = true;
    }
    return s;
}

// Interior coordinates of a sent cell in the receiver's frame.
Int3 toReceiverFrame(const Int3& cell, const Pulse& pulse, const GridHaloPlan& sender, const GridHaloPlan& receiver) {
    Int3 x = cell;
    const int d = pulse.dim;
    if (pulse.direction == Direction::Down) {
        x[d] = cell[d] + receiver.interior[d];  // sender's low layers -> receiver's upper halo
    } else {
        x[d] = cell[d] - sender.interior[d];  // sender's top layers -> receiver's lower halo
    }
    return x;
}

}  // namespace

int blockStart(int cells, int n, int c) { return static_cast<int>(static_cast<long long>(cells) * c / n); }

int blockExtent(int cells, int n, int c) { return blockStart(cells, n, c + 1) - blockStart(cells, n, c); }

void validateGridSpec(const GridSpec& spec) {
    if (spec.haloWidth < 1) {
        throwError(ErrorKind::InvalidInput, fmt::format("halo width {} must be at least 1 cell", spec.haloWidth));
    }
    std::array<bool, 3> seen{false, false, false};
    for (int d : spec.dimOrder) {
        if (d < 0 || d > 2 || seen[d]) {
            throwError(ErrorKind::InvalidInput, "grid pulse order is not a permutation of the dimensions 0, 1, 2");
        }
        seen[d] = true;
    }
    for (int d = 0; d < 3; ++d) {
        const int cells = spec.cells[d];
        const int n = spec.grid.dim(d);
        if (cells < 1) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("grid has {} cells along {}; every dimension needs at least one", cells,
                                   kDimName[d]));
        }
        if (n > cells) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("{} ranks along {} but only {} cells: every rank needs at least one cell; use "
                                   "fewer ranks along {}",
                                   n, kDimName[d], cells, kDimName[d]));
        }
        if (cells > 1) {
            int smallest = cells;
            for (int c = 0; c < n; ++c) smallest = std::min(smallest, blockExtent(cells, n, c));
            if (spec.haloWidth > smallest) {
                throwError(ErrorKind::InvalidInput,
                           fmt::format("halo width {} along {} is wider than the smallest block ({} cells of {} over "
                                       "{} ranks); use fewer ranks along {} or a narrower halo",
                                       spec.haloWidth, kDimName[d], smallest, cells, n, kDimName[d]));
            }
        }
    }
}

GridHaloPlan buildGridPlan(const GridSpec& spec, int rank) {
    validateGridSpec(spec);
    if (rank < 0 || rank >= spec.grid.size()) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("rank {} is outside the rank grid {}", rank, spec.grid.toString()));
    }
    Skeleton self = buildSkeleton(spec, rank);
    GridHaloPlan& plan = self.plan;
    for (Pulse& pulse : plan.pulses) {
        if (pulse.recvRank >= 0) {
            const Skeleton sender = pulse.recvRank == rank ? self : buildSkeleton(spec, pulse.recvRank);
            for (const Int3& cell : sender.sendCells[pulse.id]) {
                const Int3 x = toReceiverFrame(cell, sender.plan.pulses[pulse.id], sender.plan, plan);
                pulse.recvIndices.push_back(plan.localIndex(x[0], x[1], x[2]));
            }
            HALOEX_ASSERT(static_cast<int>(pulse.recvIndices.size()) == pulse.recvCount,
                          "sender and receiver disagree on a grid pulse's size");
        }
        if (pulse.sendRank >= 0) {
            const Skeleton receiver = pulse.sendRank == rank ? self : buildSkeleton(spec, pulse.sendRank);
            for (const Int3& cell : self.sendCells[pulse.id]) {
                const Int3 x = toReceiverFrame(cell, pulse, plan, receiver.plan);
                pulse.remoteRecvIndices.push_back(receiver.plan.localIndex(x[0], x[1], x[2]));
            }
        }
    }
    computeDependencies(plan.pulses, plan.receivedInPulse);
    return plan;
}

}  // namespace haloex::plan
