#pragma once
/// @file
/// The `reference` transport: host memory, pulse by pulse over a World (the
/// in-process thread world puts all ranks in one process). It is the oracle the
/// other transports are checked against, and it also offers typed exchanges in
/// any precision for tests (along the pulses of the plan given to setPlan).
#include <vector>

#include "haloex/transport/block_transport.hpp"
#include "haloex/detail/transport/host_exchange.hpp"

namespace haloex::transport {

/// Adds the pulse's periodic shift to a packed position.
template <class T>
Vec3<T> shiftedForPulse(const plan::Pulse& pulse, const plan::Box& box, Vec3<T> x) {
    if (pulse.shiftSign != 0) x[pulse.dim] += static_cast<T>(pulse.shiftSign * box.length[pulse.dim]);
    return x;
}

/// The `reference` backend (see the file's description); the registry makes
/// it as makeTransport(Backend::Reference, world).
class ReferenceTransport final : public BlockTransport {
public:
    /// Over `world`, which must outlive it (a thread or single-rank world).
    explicit ReferenceTransport(runtime::World& world) : world_(world) {}

    std::string name() const override { return "reference"; }
    MemorySpace memorySpace() const override { return MemorySpace::Host; }
    void exchangeBlocks(std::span<const BlockExchange> blocks, StreamHandle) override {
        exchangeBlocksOnHost(world_, blocks, messages_);
    }
    std::unique_ptr<CoordinateForceExchange> makeCoordinateForceExchange() override {
        return makeHostCoordinateForceExchange(world_, "reference: host memory, pulse by pulse (the oracle)", false);
    }

    /// The typed exchanges' plan (host index maps).
    void setPlan(const plan::ParticleHaloPlan& plan) {
        requireHostPlan(plan, "the reference transport");
        plan_ = plan;
    }
    const plan::ParticleHaloPlan& plan() const { return plan_; }  ///< the typed exchanges' plan

    /// Typed exchanges on caller arrays (numLocal elements), any precision.
    template <class T>
    void forwardPositions(std::span<Vec3<T>> x, const plan::Box& box) {
        forwardPulses(world_, plan_.pulses, x,
                      [&](const plan::Pulse& p, const Vec3<T>& v) { return shiftedForPulse(p, box, v); });
    }
    /// Any field forward, owners -> ghosts, without a shift.
    template <class T>
    void forward(std::span<T> field) {
        forwardPulses(world_, plan_.pulses, field);
    }
    /// Any field back, ghosts -> owners, added.
    template <class T>
    void reverseAdd(std::span<T> field) {
        reversePulses(world_, plan_.pulses, field);
    }

private:
    runtime::World& world_;
    plan::ParticleHaloPlan plan_;
    std::vector<runtime::PeerMessage> messages_;  ///< exchangeBlocks' scratch
};

}  // namespace haloex::transport
