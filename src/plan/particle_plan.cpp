#include "haloex/plan/particle_plan.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <limits>

#include "haloex/core/error.hpp"
#include "haloex/plan/send_rule.hpp"

namespace haloex::plan {
namespace {

int alignUp(int n, int alignment) { return (n + alignment - 1) / alignment * alignment; }

}  // namespace

int ParticleHaloPlan::numHalo() const {
    int n = 0;
    for (const auto& p : pulses) n += p.recvCount;
    return n;
}

int ParticleHaloPlan::maxSendCount() const {
    int n = 0;
    for (const auto& p : pulses) n = std::max(n, p.sendCount());
    return n;
}

int ParticleHaloPlan::maxRecvCapacity() const {
    int n = 0;
    for (const auto& p : pulses) n = std::max(n, p.recvCapacity);
    return n;
}

ParticlePlanBuilder::ParticlePlanBuilder(const Decomposition& decomposition, int rank,
                                         std::span<const Vec3d> homePositions, int alignment)
    : decomposition_(decomposition) {
    const RankGrid& grid = decomposition.grid();
    if (rank < 0 || rank >= grid.size()) {
        throwError(ErrorKind::InvalidInput, fmt::format("rank {} is outside the rank grid {}", rank, grid.toString()));
    }
    if (alignment < 1) {
        throwError(ErrorKind::InvalidInput, fmt::format("receive alignment {} must be at least 1 atom", alignment));
    }
    plan_.rank = rank;
    plan_.coord = grid.coordOf(rank);
    plan_.alignment = alignment;
    plan_.numHome = static_cast<int>(homePositions.size());
    positions_.assign(homePositions.begin(), homePositions.end());
    for (std::size_t i = 0; i < positions_.size(); ++i) {
        if (decomposition.ownerRank(positions_[i]) != rank) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("home atom {} of rank {} at ({}, {}, {}) nm lies outside the rank's cell; "
                                   "partition atoms with partitionAtoms() after wrapping them into the box",
                                   i, rank, positions_[i].x, positions_[i].y, positions_[i].z));
        }
    }
    plan_.zoneMask.assign(positions_.size(), 0);
    plan_.receivedInPulse.assign(positions_.size(), -1);
    const auto& order = decomposition.pulseOrder();
    for (int p = 0; p < static_cast<int>(order.size()); ++p) {
        Pulse pulse;
        pulse.id = p;
        pulse.dim = order[p].dim;
        pulse.stage = order[p].stage;
        pulse.direction = Direction::Down;
        pulse.sendRank = grid.neighbour(rank, pulse.dim, -1);
        pulse.recvRank = grid.neighbour(rank, pulse.dim, +1);
        pulse.shiftSign = plan_.coord[pulse.dim] == 0 ? 1 : 0;
        plan_.pulses.push_back(std::move(pulse));
    }
}

int ParticlePlanBuilder::numPulses() const { return static_cast<int>(plan_.pulses.size()); }

OutgoingAtoms ParticlePlanBuilder::selectSend(int p) {
    HALOEX_ASSERT(p == nextSend_ && p == nextReceive_, "pulses must be selected and received in order");
    Pulse& pulse = plan_.pulses[p];
    const int d = pulse.dim;
    const PulseSendRule rule = sendRuleOf(decomposition_, plan_.rank, d);
    int first = 0, last = static_cast<int>(positions_.size());
    if (pulse.stage > 0) {
        // Forwarding: only what arrived in the previous pulse of this dimension.
        const Pulse& previous = plan_.pulses[p - 1];
        first = previous.recvOffset;
        last = previous.recvOffset + previous.recvCount;
    }
    pulse.sendIndices.clear();
    for (int i = first; i < last; ++i) {
        if (sendsAtom(rule, positions_[i], plan_.zoneMask[i])) pulse.sendIndices.push_back(i);
    }
    OutgoingAtoms out;
    out.positions.reserve(pulse.sendIndices.size());
    out.masks.reserve(pulse.sendIndices.size());
    const double shift = pulse.shiftSign * decomposition_.box().length[d];
    for (int i : pulse.sendIndices) {
        Vec3d x = positions_[i];
        x[d] += shift;
        out.positions.push_back(x);
        out.masks.push_back(static_cast<ZoneMask>(plan_.zoneMask[i] | (1u << d)));
    }
    ++nextSend_;
    return out;
}

void ParticlePlanBuilder::receive(int p, std::span<const Vec3d> positions, std::span<const ZoneMask> masks) {
    HALOEX_ASSERT(p == nextReceive_ && p < nextSend_, "pulses must be selected and received in order");
    HALOEX_ASSERT(positions.size() == masks.size(), "one mask per received atom");
    Pulse& pulse = plan_.pulses[p];
    const int alignment = plan_.alignment;
    const auto pad = [&](int upTo) {
        const Vec3d nan{std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN(),
                        std::numeric_limits<double>::quiet_NaN()};
        while (static_cast<int>(positions_.size()) < upTo) {
            positions_.push_back(nan);
            plan_.zoneMask.push_back(kPaddingMask);
            plan_.receivedInPulse.push_back(-1);
        }
    };
    pad(alignUp(static_cast<int>(positions_.size()), alignment));
    pulse.recvOffset = static_cast<int>(positions_.size());
    pulse.recvCount = static_cast<int>(positions.size());
    pulse.recvCapacity = alignUp(pulse.recvCount, alignment);
    for (std::size_t i = 0; i < positions.size(); ++i) {
        positions_.push_back(positions[i]);
        plan_.zoneMask.push_back(masks[i]);
        plan_.receivedInPulse.push_back(p);
    }
    pad(pulse.recvOffset + pulse.recvCapacity);
    ++nextReceive_;
}

void ParticlePlanBuilder::setRemoteRecvOffset(int p, int offset) { plan_.pulses.at(p).remoteRecvOffset = offset; }

int ParticlePlanBuilder::recvOffset(int p) const {
    HALOEX_ASSERT(p < nextReceive_, "receive offset asked before the pulse was received");
    return plan_.pulses.at(p).recvOffset;
}

ParticleHaloPlan ParticlePlanBuilder::finish() {
    HALOEX_ASSERT(nextReceive_ == numPulses(), "finish() before every pulse was received");
    if (numPulses() == 0) {
        // Keep numLocal aligned like the receive slots would be; padding is
        // NaN here too, so code that forgets the mask fails loudly.
        const double nan = std::numeric_limits<double>::quiet_NaN();
        while (static_cast<int>(positions_.size()) % plan_.alignment) {
            positions_.push_back(Vec3d{nan, nan, nan});
            plan_.zoneMask.push_back(kPaddingMask);
            plan_.receivedInPulse.push_back(-1);
        }
    }
    plan_.numLocal = static_cast<int>(positions_.size());
    computeDependencies(plan_.pulses, plan_.receivedInPulse);
    return plan_;
}

InProcessPlans buildParticlePlansInProcess(const Decomposition& decomposition,
                                           const std::vector<std::vector<Vec3d>>& homePositions, int alignment) {
    const int numRanks = decomposition.grid().size();
    requireGridMatchesRanks(decomposition.grid(), static_cast<int>(homePositions.size()));
    std::vector<ParticlePlanBuilder> builders;
    builders.reserve(numRanks);
    for (int r = 0; r < numRanks; ++r) builders.emplace_back(decomposition, r, homePositions[r], alignment);
    const int numPulses = decomposition.totalPulses();
    std::vector<OutgoingAtoms> outgoing(numRanks);
    for (int p = 0; p < numPulses; ++p) {
        for (int r = 0; r < numRanks; ++r) outgoing[r] = builders[r].selectSend(p);
        const auto& slot = decomposition.pulseOrder()[p];
        for (int r = 0; r < numRanks; ++r) {
            const int upper = decomposition.grid().neighbour(r, slot.dim, +1);
            builders[r].receive(p, outgoing[upper].positions, outgoing[upper].masks);
        }
    }
    for (int p = 0; p < numPulses; ++p) {
        const auto& slot = decomposition.pulseOrder()[p];
        for (int r = 0; r < numRanks; ++r) {
            const int lower = decomposition.grid().neighbour(r, slot.dim, -1);
            builders[r].setRemoteRecvOffset(p, builders[lower].recvOffset(p));
        }
    }
    InProcessPlans result;
    for (auto& builder : builders) {
        result.plans.push_back(builder.finish());  // first: it may append padding
        result.localPositions.push_back(builder.localPositions());
    }
    return result;
}

std::vector<std::vector<int>> partitionAtoms(const Decomposition& decomposition, std::span<const Vec3d> positions) {
    std::vector<std::vector<int>> byRank(decomposition.grid().size());
    const auto& L = decomposition.box().length;
    for (std::size_t i = 0; i < positions.size(); ++i) {
        const Vec3d& x = positions[i];
        if (!isFinite(x)) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("atom {} has a non-finite coordinate ({}, {}, {})", i, x.x, x.y, x.z));
        }
        for (int d = 0; d < 3; ++d) {
            if (x[d] < 0.0 || x[d] >= L[d]) {
                throwError(ErrorKind::InvalidInput,
                           fmt::format("atom {} at ({}, {}, {}) nm lies outside the box; wrap positions first "
                                       "(wrapPositions)",
                                       i, x.x, x.y, x.z));
            }
        }
        byRank[decomposition.ownerRank(x)].push_back(static_cast<int>(i));
    }
    return byRank;
}

}  // namespace haloex::plan
