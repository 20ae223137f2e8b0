#pragma once
// The coordinate/force exchange of a transport that keeps the exchange's
// state itself (ipc, nvshmem, nccl-device share mappings, watchdogs and
// signals between their blocks and their MD exchange): it forwards each call
// to the transport's bindArrays, forwardCoordinates, reverseForces,
// clearForces and counters, and to its clearHaloForces, recordTimestamps,
// lastTimestamps, signalForwardLaunched, homeCoordinateStores,
// forwardCoordinatesAfterHomeStores, copyReceivedCoordinates and
// addHaloForcesFromRecords where it has them. Internal.
#include "haloex/transport/coordinate_force_exchange.hpp"

namespace haloex::transport {

template <class Transport, bool kGraphCapturable>
class ForwardingCoordinateForceExchange final : public CoordinateForceExchange {
    static_assert(
        !requires(Transport & t) { t.signalForwardLaunched(nullptr); } ||
            requires(const Transport& t) { t.forwardLaunchedEvent(); },
        "a transport that registers a launch-completion event must report it (forwardLaunchedEvent), so "
        "that an exchange going away unregisters its own event and only its own");

public:
    explicit ForwardingCoordinateForceExchange(Transport& transport) : transport_(transport) {}
    // The transport outlives this exchange (an engine's, then the next's: the
    // automatic choice hands its measured transport on): an event signalled
    // through this exchange belongs to its user, so it is not left behind --
    // unless another exchange has registered its own since.
    ~ForwardingCoordinateForceExchange() override {
        // Its user's halo records go with it: the transport's next
        // exchange must not write into them.
        if constexpr (requires { transport_.copyReceivedCoordinates(HaloRecords{}); }) {
            transport_.copyReceivedCoordinates(HaloRecords{});
        }
        if constexpr (requires { transport_.addHaloForcesFromRecords(HaloRecords{}); }) {
            transport_.addHaloForcesFromRecords(HaloRecords{});
        }
        if constexpr (requires { transport_.forwardLaunchedEvent(); }) {
            if (signalled_ != nullptr && transport_.forwardLaunchedEvent() == signalled_) {
                transport_.signalForwardLaunched(nullptr);
            }
        }
    }
    ForwardingCoordinateForceExchange(const ForwardingCoordinateForceExchange&) = delete;
    ForwardingCoordinateForceExchange& operator=(const ForwardingCoordinateForceExchange&) = delete;
    void bind(const plan::ParticleHaloPlan& plan, const SharedArray& coordinates, const SharedArray& forces) override {
        transport_.bindArrays(plan, coordinates, forces);
    }
    void forwardCoordinates(const plan::Box& box, StreamHandle stream) override {
        transport_.forwardCoordinates(box, stream);
    }
    std::optional<HomeCoordinateStores> homeCoordinateStores(const plan::Box& box) const override {
        if constexpr (requires(const Transport& t) { t.homeCoordinateStores(box); }) {
            return transport_.homeCoordinateStores(box);
        } else {
            (void)box;
            return std::nullopt;
        }
    }
    void forwardCoordinatesAfterHomeStores(const plan::Box& box, StreamHandle stream) override {
        if constexpr (requires { transport_.forwardCoordinatesAfterHomeStores(box, stream); }) {
            transport_.forwardCoordinatesAfterHomeStores(box, stream);
        } else {
            transport_.forwardCoordinates(box, stream);
        }
    }
    void forwardCoordinatesAfterHomeSignals(const plan::Box& box, StreamHandle stream) override {
        if constexpr (requires { transport_.forwardCoordinatesAfterHomeSignals(box, stream); }) {
            transport_.forwardCoordinatesAfterHomeSignals(box, stream);
        } else {
            forwardCoordinatesAfterHomeStores(box, stream);
        }
    }
    bool copyReceivedCoordinates(const HaloRecords& records) override {
        if constexpr (requires { transport_.copyReceivedCoordinates(records); }) {
            return transport_.copyReceivedCoordinates(records);
        } else {
            (void)records;
            return false;
        }
    }
    bool addHaloForcesFromRecords(const HaloRecords& records) override {
        if constexpr (requires { transport_.addHaloForcesFromRecords(records); }) {
            return transport_.addHaloForcesFromRecords(records);
        } else {
            (void)records;
            return false;
        }
    }
    void reverseForces(StreamHandle stream) override { transport_.reverseForces(stream); }
    void clearForces(StreamHandle stream) override { transport_.clearForces(stream); }
    void clearHaloForces(StreamHandle stream) override {
        if constexpr (requires { transport_.clearHaloForces(stream); }) {
            transport_.clearHaloForces(stream);
        } else {
            transport_.clearForces(stream);
        }
    }
    bool graphCapturable() const override { return kGraphCapturable; }
    const TransportCounters& counters() const override { return transport_.counters(); }
    bool recordTimestamps(bool on) override {
        if constexpr (requires { transport_.recordTimestamps(on); }) {
            return transport_.recordTimestamps(on);
        } else {
            (void)on;
            return false;
        }
    }
    std::optional<ExchangeTimestamps> lastTimestamps() const override {
        if constexpr (requires { transport_.lastTimestamps(); }) {
            return transport_.lastTimestamps();
        } else {
            return std::nullopt;
        }
    }
    bool signalForwardLaunched(void* event) override {
        if constexpr (requires { transport_.signalForwardLaunched(event); }) {
            const bool recorded = transport_.signalForwardLaunched(event);
            signalled_ = recorded ? event : nullptr;
            return recorded;
        } else {
            (void)event;
            return false;
        }
    }

private:
    Transport& transport_;
    void* signalled_ = nullptr;  // the event this exchange's user registered in the transport, if any
};

}  // namespace haloex::transport
