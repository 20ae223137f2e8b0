#pragma once
// The GPU-initiated measurements between ranks 0 and 1 (NVSHMEM must be
// initialised; ranks beyond 1 take part in the collectives only).
#include <vector>

#include "haloex/runtime/world.hpp"
#include "results.hpp"
#include "settings.hpp"

namespace haloex::commbench {

// Collective.
std::vector<Measurement> runGpuInitiated(runtime::World& world, const BenchSettings& settings);

}  // namespace haloex::commbench
