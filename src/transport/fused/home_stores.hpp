#pragma once
// The table of transport::HomeCoordinateStores that the fused transports
// (nvshmem, the peer-window transport of nccl-device) hand out: per pulse
// that sends home atoms, the receiver's slot (a peer pointer) and every home
// atom's entry in the pulse (or -1), so that a caller's kernel stores an
// atom's coordinates where the forward would (home_stores.cu).
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

// `stores` with each pulse's periodic shift for `box`, rounded to float as
// the forward rounds its own.
transport::HomeCoordinateStores withShifts(transport::HomeCoordinateStores stores, const plan::Box& box);

}  // namespace haloex::nvshmem_detail
