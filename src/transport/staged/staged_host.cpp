// The `staged` transport in host memory: the reference algorithm, pulse by
// pulse over any World (MPI included), so CPU-only runs have a multi-process
// path with the same counters as the device transports.
#include "haloex/detail/transport/host_exchange.hpp"
#include "staged_transport.hpp"

namespace haloex::transport {
namespace {

class StagedHostTransport final : public BlockTransport {
public:
    explicit StagedHostTransport(runtime::World& world) : world_(world) {}

    std::string name() const override { return "staged"; }
    MemorySpace memorySpace() const override { return MemorySpace::Host; }
    void exchangeBlocks(std::span<const BlockExchange> blocks, StreamHandle) override {
        exchangeBlocksOnHost(world_, blocks, messages_);
    }
    // The host waits for the peers once per pulse and direction.
    std::unique_ptr<CoordinateForceExchange> makeCoordinateForceExchange() override {
        return makeHostCoordinateForceExchange(world_,
                                               "staged: host memory, one World::sendRecv per pulse and direction",
                                               true);
    }
    std::vector<std::string> describe() const override {
        return {"staged: exchangeBlocks: every block in one World::sendRecvMany (one round trip)"};
    }

private:
    runtime::World& world_;
    std::vector<runtime::PeerMessage> messages_;  // exchangeBlocks' scratch
};

}  // namespace

std::unique_ptr<BlockTransport> makeStagedHostTransport(runtime::World& world) {
    return std::make_unique<StagedHostTransport>(world);
}

}  // namespace haloex::transport
