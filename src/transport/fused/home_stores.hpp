#pragma once
// The table of transport::HomeCoordinateStores that the fused transports
// (nvshmem, the peer-window transport of nccl-device) hand out: per pulse
// that sends home atoms, the receiver's slot (a peer pointer) and every home
// atom's entry in the pulse (or -1), so that a caller's kernel stores an
// atom's coordinates where the forward would (home_stores.cu).
#include <cstdint>
#include <optional>
#include <vector>

#include "fused_args.hpp"
#include "haloex/cuda/device_buffer.hpp"
#include "haloex/plan/box.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"

namespace haloex::nvshmem_detail {

// One fused transport's table across binds: what it hands out
// (CoordinateForceExchange::homeCoordinateStores) and which pulses the
// storing kernel signals (FusedArgs::callerSignalled).
class HomeStores {
public:
    // At every bind, once this plan's records are final: the table for them
    // (with device index maps), written on the legacy stream -- the caller
    // synchronises the device before any kernel reads it (both transports'
    // bindArrays do, right after uploadPulses). Empty where a pulse that
    // sends home atoms goes by put (no pointer to store through), where no
    // pulse sends any, or where more pulses do than a table holds. Its
    // signals: for the pulses that send home atoms alone (or nothing), by
    // load/store, each signalled with one word (`perPulseSignals`), never the
    // one a test withholds. Also skips one value of the forward's exchange
    // counter `sequence`, on every rank, so that a signal a storing kernel
    // sent under the last plan (for a forward that then never came: a
    // search followed) is below what the new plan's first forward waits for.
    void rebuild(const std::vector<PulseRecord>& records, int numHome, std::uint64_t* sequence, bool perPulseSignals,
                 int withholdPulse);
    // The table with each pulse's periodic shift for `box`, rounded to float
    // as the forward rounds its own; empty where none is offered.
    std::optional<transport::HomeCoordinateStores> table(const plan::Box& box) const;
    bool offered() const { return stores_.has_value(); }
    // Bit p: the storing kernel signals pulse p's receiver.
    unsigned signalledPulses() const { return signalled_; }

private:
    cuda::DeviceBuffer<int> entries_;                        // each pulse's entryOfHome, pulse after pulse
    cuda::DeviceBuffer<unsigned> blockCounter_;              // the storing kernel's finished blocks (signalHomeStores)
    std::optional<transport::HomeCoordinateStores> stores_;  // shifts set per call (table)
    unsigned signalled_ = 0;
};

// The three calls of CoordinateForceExchange's home-store path, written
// once for both fused transports (CRTP): `Transport` has
// forward(box, stream, homeStored, callerSignalled) -- the last a mask of
// pulses, FusedArgs::callerSignalled -- and rebuilds homeStores_ at every bind.
template <class Transport>
class HomeStoreCalls {
public:
    // Where the caller's kernel may store the home coordinates itself
    // (CoordinateForceExchange::homeCoordinateStores).
    std::optional<transport::HomeCoordinateStores> homeCoordinateStores(const plan::Box& box) const {
        return homeStores_.table(box);
    }
    // The forward once the caller stored the home entries: the fused kernels
    // skip them (FusedArgs::homeStored).
    void forwardCoordinatesAfterHomeStores(const plan::Box& box, transport::StreamHandle stream) {
        self().forward(box, stream, homeStores_.offered(), 0u);
    }
    // ... and also signalled the pulses it could (FusedArgs::callerSignalled).
    void forwardCoordinatesAfterHomeSignals(const plan::Box& box, transport::StreamHandle stream) {
        self().forward(box, stream, homeStores_.offered(), homeStores_.signalledPulses());
    }

protected:
    HomeStores homeStores_;  // rebuilt at every bind

private:
    Transport& self() { return static_cast<Transport&>(*this); }
};

// What ForwardingCoordinateForceExchange looks for (with `requires`) to
// offer the home-store path; asserted where a fused transport makes its
// exchange, so that a name made ambiguous by a later base class is a
// compile error, not a silent fall back to the full forward.
template <class T>
concept OffersHomeStores = requires(T& t, const T& c, const plan::Box& box, transport::StreamHandle stream) {
    c.homeCoordinateStores(box);
    t.forwardCoordinatesAfterHomeStores(box, stream);
    t.forwardCoordinatesAfterHomeSignals(box, stream);
};

}  // namespace haloex::nvshmem_detail
