#pragma once
// The `reference` transport: host memory, pulse by pulse over a World (the
// in-process thread world puts all ranks in one process). It is the oracle the
// other transports are checked against, and it also offers typed exchanges in
// any precision for tests.
#include <vector>

#include "haloex/transport/host_exchange.hpp"
#include "haloex/transport/transport.hpp"

namespace haloex::transport {

// Adds the pulse's periodic shift to a packed position.
template <class T>
Vec3<T> shiftedForPulse(const plan::Pulse& pulse, const plan::Box& box, Vec3<T> x) {
    if (pulse.shiftSign != 0) x[pulse.dim] += static_cast<T>(pulse.shiftSign * box.length[pulse.dim]);
    return x;
}

class ReferenceTransport final : public ParticleTransport {
public:
    explicit ReferenceTransport(runtime::World& world) : world_(world) {}

    std::string name() const override { return "reference"; }
    MemorySpace memorySpace() const override { return MemorySpace::Host; }
    void setPlan(const plan::ParticleHaloPlan& plan) override;
    const plan::ParticleHaloPlan& plan() const override { return plan_; }
    Vec3f* coordinates() override { return x_.data(); }
    Vec3f* forces() override { return f_.data(); }
    void forwardCoordinates(const plan::Box& box, StreamHandle) override;
    void reverseForces(StreamHandle) override;
    void clearForces(StreamHandle) override;
    void forwardBytes(void* data, std::size_t elementSize, StreamHandle) override;
    void exchangeBlock(const void* send, std::size_t sendBytes, int dest, void* recv, std::size_t recvBytes, int src,
                       StreamHandle) override {
        exchangeBlockOnHost(world_, send, sendBytes, dest, recv, recvBytes, src);
    }
    void exchangeBlocks(std::span<const BlockExchange> blocks, StreamHandle) override {
        exchangeBlocksOnHost(world_, blocks, messages_);
    }
    const TransportCounters& counters() const override { return counters_; }

    // Typed exchanges on caller arrays (numLocal elements), any precision.
    template <class T>
    void forwardPositions(std::span<Vec3<T>> x, const plan::Box& box) {
        forwardPulses(world_, plan_.pulses, x,
                      [&](const plan::Pulse& p, const Vec3<T>& v) { return shiftedForPulse(p, box, v); });
    }
    template <class T>
    void forward(std::span<T> field) {
        forwardPulses(world_, plan_.pulses, field);
    }
    template <class T>
    void reverseAdd(std::span<T> field) {
        reversePulses(world_, plan_.pulses, field);
    }

private:
    runtime::World& world_;
    plan::ParticleHaloPlan plan_;
    std::vector<Vec3f> x_, f_;
    std::vector<runtime::PeerMessage> messages_;  // exchangeBlocks' scratch
    TransportCounters counters_;
};

}  // namespace haloex::transport
