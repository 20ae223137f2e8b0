// The host backends' coordinate/force exchange (detail/transport/host_exchange.hpp):
// forwardPulses with the periodic shift, reversePulses, on the caller's arrays.
#include <algorithm>

#include "haloex/detail/transport/host_exchange.hpp"
#include "haloex/transport/reference.hpp"

namespace haloex::transport {
namespace {

class HostCoordinateForceExchange final : public CoordinateForceExchange {
public:
    HostCoordinateForceExchange(runtime::World& world, std::string description, bool countHostSyncs)
        : world_(world), description_(std::move(description)), countHostSyncs_(countHostSyncs) {}

    void bind(const plan::ParticleHaloPlan& plan, const SharedArray& coordinates, const SharedArray& forces) override {
        requireHostPlan(plan, "a host backend");
        pulses_ = plan.pulses;
        const auto n = static_cast<std::size_t>(plan.numLocal);
        x_ = std::span(static_cast<Vec3f*>(coordinates.data), n);
        f_ = std::span(static_cast<Vec3f*>(forces.data), n);
    }
    void forwardCoordinates(const plan::Box& box, StreamHandle) override {
        forwardPulses(world_, pulses_, x_,
                      [&](const plan::Pulse& p, const Vec3f& v) { return shiftedForPulse(p, box, v); });
        ++counters_.forwardCalls;
        if (countHostSyncs_) counters_.hostSyncs += static_cast<std::int64_t>(pulses_.size());
    }
    void reverseForces(StreamHandle) override {
        reversePulses(world_, pulses_, f_);
        ++counters_.reverseCalls;
        if (countHostSyncs_) counters_.hostSyncs += static_cast<std::int64_t>(pulses_.size());
    }
    void clearForces(StreamHandle) override { std::fill(f_.begin(), f_.end(), Vec3f{}); }
    // Host memory: nothing to capture (and the calls complete on return).
    bool graphCapturable() const override { return false; }
    const TransportCounters& counters() const override { return counters_; }
    std::vector<std::string> describe() const override { return {description_}; }

private:
    runtime::World& world_;
    std::string description_;
    bool countHostSyncs_;
    std::vector<plan::Pulse> pulses_;
    std::span<Vec3f> x_, f_;
    TransportCounters counters_;
};

}  // namespace

std::unique_ptr<CoordinateForceExchange> makeHostCoordinateForceExchange(runtime::World& world, std::string description,
                                                                         bool countHostSyncs) {
    return std::make_unique<HostCoordinateForceExchange>(world, std::move(description), countHostSyncs);
}

}  // namespace haloex::transport
