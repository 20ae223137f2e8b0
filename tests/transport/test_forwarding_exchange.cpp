// The coordinate/force exchange that forwards to a stateful transport
// (src/transport/common/forwarding_exchange.hpp): a launch-completion event
// signalled through one exchange is the caller's, so destroying that
// exchange unregisters it from the transport, which may serve another
// exchange next (the automatic choice hands its measured transport on to
// the run; a stale event there failed the run's first forward on the GPU),
// unless another exchange has registered its own since.
#include <gtest/gtest.h>

#include "forwarding_exchange.hpp"

namespace haloex::transport {
namespace {

// What ForwardingCoordinateForceExchange calls, without signalForwardLaunched
// (as ipc and staged): nothing to register or undo.
struct PlainTransport {
    void bindArrays(const plan::ParticleHaloPlan&, const SharedArray&, const SharedArray&) {}
    void forwardCoordinates(const plan::Box&, StreamHandle) {}
    void reverseForces(StreamHandle) {}
    void clearForces(StreamHandle) {}
    const TransportCounters& counters() const { return counters_; }
    TransportCounters counters_;
};

// With it (as nvshmem): the event it holds, and how often it was set.
struct RecordingTransport : PlainTransport {
    bool signalForwardLaunched(void* event) {
        ++signals;
        registered = event;
        return true;
    }
    void* forwardLaunchedEvent() const { return registered; }
    void* registered = nullptr;
    int signals = 0;
};

using Recording = ForwardingCoordinateForceExchange<RecordingTransport, true>;

TEST(ForwardingExchange, DestroyingTheExchangeUnregistersItsEvent) {
    RecordingTransport transport;
    int event = 0;
    {
        Recording exchange(transport);
        EXPECT_TRUE(exchange.signalForwardLaunched(&event));
        EXPECT_EQ(transport.registered, &event);
    }
    EXPECT_EQ(transport.registered, nullptr) << "the next exchange on this transport would record a dead event";
    EXPECT_EQ(transport.signals, 2);
}

TEST(ForwardingExchange, AnExchangeThatSignalledNothingLeavesTheTransportAlone) {
    RecordingTransport transport;
    int event = 0;
    Recording first(transport);
    first.signalForwardLaunched(&event);
    {
        Recording second(transport);  // never signals, or stops its own signal
        second.signalForwardLaunched(nullptr);
        first.signalForwardLaunched(&event);
    }
    EXPECT_EQ(transport.registered, &event) << "another exchange's registration was undone";
}

TEST(ForwardingExchange, AnExchangeGoingAwayLeavesAnotherExchangesLaterEvent) {
    RecordingTransport transport;
    int mine = 0, theirs = 0;
    Recording second(transport);
    {
        Recording first(transport);
        first.signalForwardLaunched(&mine);
        second.signalForwardLaunched(&theirs);  // registered after first's
    }
    EXPECT_EQ(transport.registered, &theirs) << "the exchange that went away undid another's registration";
}

TEST(ForwardingExchange, TransportsWithoutTheSignalRecordNothing) {
    PlainTransport transport;
    int event = 0;
    ForwardingCoordinateForceExchange<PlainTransport, false> exchange(transport);
    EXPECT_FALSE(exchange.signalForwardLaunched(&event));
}

}  // namespace
}  // namespace haloex::transport
