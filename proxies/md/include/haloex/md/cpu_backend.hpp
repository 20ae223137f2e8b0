#pragma once
// The CPU reference backend: forces from the CPU oracle (cell lists, rc) on
// home + halo atoms under the zone-mask rule, leapfrog on the host, the halo
// exchange through a host-memory transport.
#include <memory>

#include "haloex/md/backend.hpp"

namespace haloex::md {

std::unique_ptr<RankBackend> makeCpuBackend();

}  // namespace haloex::md
