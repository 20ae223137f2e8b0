// The `staged` transport in host memory: the reference algorithm, pulse by
// pulse over any World (MPI included), so CPU-only runs have a multi-process
// path with the same counters as the device transports.
#include <algorithm>
#include <cstring>

#include "haloex/transport/reference.hpp"
#include "haloex/transport/staged.hpp"

namespace haloex::transport {
namespace {

// A fixed-size element of a byte-wise exchanged field (forwardBytes).
struct Bytes16 {
    std::byte b[16];
};

class StagedHostTransport final : public ParticleTransport {
public:
    explicit StagedHostTransport(runtime::World& world) : world_(world) {}

    std::string name() const override { return "staged"; }
    MemorySpace memorySpace() const override { return MemorySpace::Host; }

    void setPlan(const plan::ParticleHaloPlan& plan) override {
        requireHostPlan(plan, "the staged transport in host memory");
        plan_ = plan;
        x_.assign(static_cast<std::size_t>(plan_.numLocal), Vec3f{});
        f_.assign(static_cast<std::size_t>(plan_.numLocal), Vec3f{});
    }
    const plan::ParticleHaloPlan& plan() const override { return plan_; }
    Vec3f* coordinates() override { return x_.data(); }
    Vec3f* forces() override { return f_.data(); }

    void forwardCoordinates(const plan::Box& box, StreamHandle) override {
        forwardPulses(world_, plan_.pulses, std::span<Vec3f>(x_),
                      [&](const plan::Pulse& p, const Vec3f& v) { return shiftedForPulse(p, box, v); });
        ++counters_.forwardCalls;
        // The host waits for the peers once per pulse.
        counters_.hostSyncs += static_cast<std::int64_t>(plan_.pulses.size());
    }

    void reverseForces(StreamHandle) override {
        reversePulses(world_, plan_.pulses, std::span<Vec3f>(f_));
        ++counters_.reverseCalls;
        counters_.hostSyncs += static_cast<std::int64_t>(plan_.pulses.size());
    }

    void clearForces(StreamHandle) override { std::fill(f_.begin(), f_.end(), Vec3f{}); }

    void forwardBytes(void* data, std::size_t elementSize, StreamHandle) override {
        HALOEX_ASSERT(elementSize > 0 && elementSize <= sizeof(Bytes16),
                      "forwardBytes supports elements of 1..16 bytes");
        // Only the packed entries travel; widen them to a fixed-size element.
        std::vector<Bytes16> wide(static_cast<std::size_t>(plan_.numLocal));
        auto* bytes = static_cast<std::byte*>(data);
        for (int i = 0; i < plan_.numLocal; ++i) std::memcpy(wide[i].b, bytes + i * elementSize, elementSize);
        forwardPulses(world_, plan_.pulses, std::span<Bytes16>(wide));
        for (int i = 0; i < plan_.numLocal; ++i) std::memcpy(bytes + i * elementSize, wide[i].b, elementSize);
    }

    void exchangeBlock(const void* send, std::size_t sendBytes, int dest, void* recv, std::size_t recvBytes, int src,
                       StreamHandle) override {
        exchangeBlockOnHost(world_, send, sendBytes, dest, recv, recvBytes, src);
    }
    void exchangeBlocks(std::span<const BlockExchange> blocks, StreamHandle) override {
        exchangeBlocksOnHost(world_, blocks, messages_);
    }

    const TransportCounters& counters() const override { return counters_; }
    std::vector<std::string> describe() const override {
        return {"staged: host memory, one World::sendRecv per pulse and direction; exchangeBlocks: every block in one "
                "World::sendRecvMany (one round trip)"};
    }

private:
    runtime::World& world_;
    plan::ParticleHaloPlan plan_;
    std::vector<Vec3f> x_, f_;
    std::vector<runtime::PeerMessage> messages_;  // exchangeBlocks' scratch
    TransportCounters counters_;
};

}  // namespace

std::unique_ptr<ParticleTransport> makeStagedHostTransport(runtime::World& world) {
    return std::make_unique<StagedHostTransport>(world);
}

}  // namespace haloex::transport
