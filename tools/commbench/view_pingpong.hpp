#pragma once
// The flag ping-pong on the library's public device halo view
// (haloex/halo/device_halo_view.cuh), over every peer-memory backend that
// can run in this job other than NVSHMEM (whose peer pointers
// direct_store_flag measures): CUDA IPC, and NCCL's device API (nccl-device,
// one rank per GPU). What a kernel of the user's own pays per hand-off.
#include <vector>

#include "haloex/runtime/world.hpp"
#include "results.hpp"
#include "settings.hpp"

namespace haloex::commbench {

// Collective; ranks beyond 1 join the collectives only. A backend that
// cannot run here gives its measurements with the reason in `skipped`.
std::vector<Measurement> runViewPingPong(runtime::World& world, const BenchSettings& settings);

}  // namespace haloex::commbench
