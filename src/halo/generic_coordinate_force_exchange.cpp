// A coordinate/force exchange on any backend (generic_coordinate_force_exchange.hpp).
#include "generic_coordinate_force_exchange.hpp"

#include "haloex/halo/element.hpp"
#include "pulse_engine.hpp"

namespace haloex::halo_detail {
namespace {

class GenericCoordinateForceExchange final : public transport::CoordinateForceExchange {
public:
    explicit GenericCoordinateForceExchange(transport::BlockTransport& transport) : transport_(transport) {}

    void bind(const plan::ParticleHaloPlan& plan, const transport::SharedArray& coordinates,
              const transport::SharedArray& forces) override {
        x_ = static_cast<Vec3f*>(coordinates.data);
        f_ = static_cast<Vec3f*>(forces.data);
        numLocal_ = plan.numLocal;
        engine_ = std::make_unique<PulseEngine>(transport_, plan.pulses, plan.numLocal);
    }
    void forwardCoordinates(const plan::Box& box, transport::StreamHandle stream) override {
        engine_->gather(x_, elementLayoutOf<Vec3f>(), &box, stream);
        ++counters_.forwardCalls;
    }
    void reverseForces(transport::StreamHandle stream) override {
        engine_->scatterAdd(f_, elementLayoutOf<Vec3f>(), stream);
        ++counters_.reverseCalls;
    }
    void clearForces(transport::StreamHandle stream) override {
        // Every entry: the halo ones too hold forces that scatterAdd sent on.
        engine_->zero(f_, static_cast<std::size_t>(numLocal_) * sizeof(Vec3f), stream);
    }
    // exchangeBlocks may block the host (and often does).
    bool graphCapturable() const override { return engine_ && engine_->pulses().empty(); }
    const transport::TransportCounters& counters() const override { return counters_; }
    std::vector<std::string> describe() const override {
        return {"coordinates and forces through the backend's exchangeBlocks, pulse batch by pulse batch (the "
                "halo API's generic path)"};
    }

private:
    transport::BlockTransport& transport_;
    std::unique_ptr<PulseEngine> engine_;
    Vec3f* x_ = nullptr;
    Vec3f* f_ = nullptr;
    int numLocal_ = 0;
    transport::TransportCounters counters_;
};

}  // namespace

std::unique_ptr<transport::CoordinateForceExchange> makeGenericCoordinateForceExchange(
    transport::BlockTransport& transport) {
    return std::make_unique<GenericCoordinateForceExchange>(transport);
}

}  // namespace haloex::halo_detail
