#pragma once
// What every rank of a fused transport (nvshmem, nccl-device) must decide
// alike when it takes a plan -- the staging size, the launch's blocks per
// pulse, signals per block -- agreed in one host reduction. A search step
// takes a new plan, and each reduction there is a round trip between the
// ranks (four of them before, one now). Pure host code: CPU tests run it.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "haloex/core/error.hpp"
#include "haloex/plan/particle_plan.hpp"
#include "haloex/runtime/world.hpp"

namespace haloex::nvshmem_detail {

// The most entries one pulse of this plan sends or receives (at least 1).
inline int largestPulseWork(const plan::ParticleHaloPlan& plan) {
    int work = 1;
    for (const plan::Pulse& pulse : plan.pulses) work = std::max({work, pulse.sendCount(), pulse.recvCapacity});
    return work;
}

struct FusedAgreement {
    std::int64_t stagingAtoms = 0;   // the largest any rank needs (0 where a transport stages nothing)
    int largestPulseWork = 1;        // over every rank's pulses
    int maxPulses = 0;               // over the ranks
    bool blockSignalsAsked = false;  // HALOEX_EXCHANGE_SIGNALS=block on every rank
};

// This rank's HALOEX_EXCHANGE_SIGNALS (empty when unset).
inline std::string exchangeSignalsAsked() {
    const char* value = std::getenv("HALOEX_EXCHANGE_SIGNALS");
    return value != nullptr ? value : "";
}

// Collective: the maxima over the ranks of this rank's `stagingAtoms`, its
// plan's largest pulse and its pulse count, and whether every rank asked for
// signals per block (`asked`, this rank's HALOEX_EXCHANGE_SIGNALS: block;
// pulse or empty: one signal per pulse, the default). A value other than
// pulse or block on any rank throws InvalidInput on every rank, after the
// reduction (so none waits alone), naming the value where this rank holds it.
// `transport` names the transport in that message.
inline FusedAgreement agreeOnFusedSetup(runtime::World& world, const plan::ParticleHaloPlan& plan,
                                        std::int64_t stagingAtoms, const std::string& asked,
                                        const std::string& transport) {
    const bool block = asked == "block";
    const bool valid = block || asked.empty() || asked == "pulse";
    // Every entry a maximum: "some rank did not ask for block" and "some
    // rank's value is invalid" are maxima of flags.
    std::array<std::int64_t, 5> v{stagingAtoms, largestPulseWork(plan), static_cast<std::int64_t>(plan.pulses.size()),
                                  block ? 0 : 1, valid ? 0 : 1};
    world.allReduce(std::span(v), runtime::ReduceOp::Max);
    if (v[4] != 0) {
        const std::string where = valid ? fmt::format("on another rank (rank {} has '{}')", world.rank(), asked)
                                        : fmt::format("'{}' on rank {}", asked, world.rank());
        throwError(ErrorKind::InvalidInput,
                   fmt::format("HALOEX_EXCHANGE_SIGNALS is neither pulse nor block {}: the {} transport takes pulse "
                               "(one signal per pulse, the default) or block (one per sending block), the same on "
                               "every rank",
                               where, transport));
    }
    return {v[0], static_cast<int>(v[1]), static_cast<int>(v[2]), v[3] == 0};
}

}  // namespace haloex::nvshmem_detail
