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

// The table for `records` (this plan's, with device index maps), its entries
// written into `entries` (grown as needed) on the legacy stream: the caller
// synchronises the device before any kernel reads them (both transports'
// bindArrays do, right after uploadPulses). Empty where a pulse that sends home atoms
// goes by put (no pointer to store through), where no pulse sends any, or
// where more pulses do than a table holds. The shifts are set per call
// (withShifts).
std::optional<transport::HomeCoordinateStores> buildHomeStores(const std::vector<PulseRecord>& records, int numHome,
                                                               cuda::DeviceBuffer<int>& entries);

// What a storing kernel needs to signal receivers itself
// (HomeCoordinateStores::signals): the forward's exchange counter and a
// zeroed block counter of the transport's; none while receivers wait for
// signals per block, and never for a pulse a test withholds.
struct HomeSignalSource {
    const std::uint64_t* sequence = nullptr;
    unsigned* blockCounter = nullptr;
    bool perPulseSignals = false;
    int withholdPulse = -1;
};
// The pulses whose receivers the storing kernel signals: those that send
// home atoms alone (or nothing), by load/store, each signalled with one word.
unsigned homeSignalledPulses(const std::vector<PulseRecord>& records, const HomeSignalSource& source);
// `stores` with those pulses' signals (none where the mask is 0).
transport::HomeCoordinateStores withHomeSignals(transport::HomeCoordinateStores stores,
                                                const std::vector<PulseRecord>& records, unsigned signalled,
                                                const HomeSignalSource& source);
// Advances the forward's exchange counter by one (on the legacy stream): at
// every bind, on every rank, so that a signal a storing kernel sent under the
// last plan (for a forward that then never came: a search followed) is below
// what the new plan's first forward waits for.
void skipSequenceValue(std::uint64_t* sequence);

// `stores` with each pulse's periodic shift for `box`, rounded to float as
// the forward rounds its own.
transport::HomeCoordinateStores withShifts(transport::HomeCoordinateStores stores, const plan::Box& box);

}  // namespace haloex::nvshmem_detail
