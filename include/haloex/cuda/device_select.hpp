#pragma once
/// @file
/// Which GPU a rank uses, and whether ranks share one (library haloex_cuda).
/// Host-only declarations: callers need no CUDA headers.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "haloex/runtime/world.hpp"

namespace haloex::cuda {

/// Makes GPU (localRank % deviceCount) current on the calling thread and
/// returns its index. Throws Cuda when no GPU is visible, and InvalidInput when
/// the node has more ranks than GPUs unless allowSharedGpus (then run the CUDA
/// MPS daemon, or the ranks' kernels only time-slice).
int selectDevice(const runtime::World& world, bool allowSharedGpus);

/// One rank's current GPU, as the node sees it.
struct GpuIdentity {
    std::string host;   ///< hostname of the rank's node
    std::string busId;  ///< PCI bus id of its current device, e.g. "0000:1B:00.0"
    int device = -1;    ///< CUDA device index in the rank's process
};

/// Every rank's current GPU, indexed by rank. Collective.
std::vector<GpuIdentity> gatherGpuIdentities(runtime::World& world);

/// The first two ranks (a < b) that use the same GPU of the same node.
std::optional<std::pair<int, int>> findSharedGpu(const std::vector<GpuIdentity>& gpus);

/// "ranks A and B share GPU <bus id> on <host>" for the first two ranks that
/// share a GPU, or empty: the one wording of every refusal that needs a GPU
/// per rank (NCCL and its device API).
std::string describeSharedGpu(const std::vector<GpuIdentity>& gpus);

}  // namespace haloex::cuda
