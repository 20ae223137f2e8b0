#pragma once
// Chooses a particle transport by name (library haloex_transports):
// "reference", "staged", "ipc", "nccl", "nvshmem". Which of them exist
// depends on what was found at configure time (haloex/config.hpp).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "haloex/runtime/world.hpp"
#include "haloex/transport/block_transport.hpp"

namespace haloex::transport {

struct TransportOptions {
    // Where the arrays it moves live. reference: Host only; ipc, nccl,
    // nvshmem: Device only; staged: either.
    MemorySpace memorySpace = MemorySpace::Device;
    // Several ranks on one GPU are accepted (the caller selected devices with
    // cuda::selectDevice(world, true); run the CUDA MPS daemon for speed).
    bool allowSharedGpus = false;
    // nvshmem: "auto" picks NVLink stores where nvshmem_ptr() reaches the peer;
    // the nvshmem transport documents the other values.
    std::string nvshmemPath = "auto";
    // nvshmem: "fused" (one kernel per exchange moves every pulse) or
    // "per-pulse" (the same kernels launched once per pulse in stream order:
    // the ablation that measures what fusing the pulses buys).
    std::string nvshmemLaunch = "fused";
    // nvshmem: seconds a device-side wait may spin before it reports a timeout.
    double waitTimeoutSeconds = 10.0;
};

// Collective over the world (every rank calls it with the same name and
// options). Device transports use the calling thread's current GPU.
// Throws InvalidInput for an unknown name (listing the known ones), for a
// transport this build lacks (naming the dependency that was missing at
// configure time), for a memory space the transport does not support, and
// for "reference" over a multi-process world (it is the in-process oracle).
std::unique_ptr<BlockTransport> makeTransport(std::string_view name, runtime::World& world,
                                              const TransportOptions& options);

// Every transport name haloex knows, in order of sophistication.
std::vector<std::string> knownTransports();
// The transports this build contains.
std::vector<std::string> availableTransports();
// Empty when `name` is available; otherwise why not (unknown, or which
// dependency was missing at configure time).
std::string transportUnavailableReason(std::string_view name);

}  // namespace haloex::transport
