#pragma once
// The GPU backend of haloex-md (built with CUDA; see config.hpp's
// HALOEX_HAVE_CUDA). This header needs no CUDA headers, so applications can
// include it from plain C++.
#include <memory>
#include <string>

#include "haloex/md/backend.hpp"
#include "haloex/runtime/world.hpp"

namespace haloex::md {

// GPUs this process can see (0 without a driver or device, or without CUDA).
int visibleGpuCount();

// Picks this rank's GPU from its node-local rank. More ranks than GPUs on a
// node throws InvalidInput unless allowShared (then start MPS first).
void selectGpuForRank(runtime::World& world, bool allowShared);

struct GpuBackendOptions {
    bool timing = true;  // record the device timeline (local / non-local / non-overlap) with events
    // Also the non-local path's parts, the update and the whole step: three
    // more events in every step, on its critical path (a build that always
    // recorded them ran one-rank steps slower: docs/architecture.md#what-the-timings-mean),
    // so only on request (--timeline-parts).
    bool timelineParts = false;
    bool countApiSyncs = false;  // CUPTI counter of host-blocking CUDA calls (RankBackend::countApiSyncs)
};

// Runs on the current CUDA device (select it first, e.g. transport::selectDevice).
std::unique_ptr<RankBackend> makeGpuBackend(const GpuBackendOptions& options);

}  // namespace haloex::md
