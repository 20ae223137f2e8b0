#pragma once
/// @file
/// The one factory of the halo backends: makeTransport(Backend, world,
/// options). Which backends it can make depends on what this library was
/// built with (backend.hpp says which, and why the others are missing).
#include <memory>
#include <optional>
#include <string>

#include "haloex/runtime/world.hpp"
#include "haloex/transport/backend.hpp"
#include "haloex/transport/block_transport.hpp"

namespace haloex::transport {

/// How makeTransport sets a backend up.
struct TransportOptions {
    /// Where the arrays it moves live. Unset: the backend's own
    /// (defaultMemorySpace: host for reference and staged, device for the
    /// others); Auto with it unset resolves for host memory. Reference: Host
    /// only; ipc, nccl, nvshmem, nccl-device: Device only; staged: either.
    std::optional<MemorySpace> memorySpace;
    /// Several ranks on one GPU are accepted (the caller selected devices with
    /// cuda::selectDevice(world, true); run the CUDA MPS daemon for speed).
    bool allowSharedGpus = false;
    /// nvshmem: "auto" picks NVLink stores where nvshmem_ptr() reaches the
    /// peer; "direct", "tma" and "put" force one path (docs/nvshmem.md).
    std::string nvshmemPath = "auto";
    /// nvshmem: "fused" (one kernel per exchange moves every pulse) or
    /// "per-pulse" (the same kernels launched once per pulse in stream order:
    /// the ablation that measures what fusing the pulses buys).
    std::string nvshmemLaunch = "fused";
    /// nvshmem, nccl-device: seconds a device-side wait may spin before it
    /// reports a timeout.
    double waitTimeoutSeconds = 10.0;
};

/// The memory space `options` ask `backend` for: options.memorySpace, or
/// unset, defaultMemorySpace(backend) (Host for Auto).
MemorySpace memorySpaceFor(Backend backend, const TransportOptions& options);

/// Collective over `world` (every rank calls it with the same backend and
/// options): makes the backend's transport, Auto resolved by resolveAuto
/// with memorySpaceFor(Auto, options). Device transports use the calling
/// thread's current GPU. Throws InvalidInput for a backend this library
/// lacks (with unavailableReason() in the message), where nccl-device cannot
/// run in this job, for a memory space the backend does not support, and for
/// Reference over a multi-process world (it is the in-process oracle).
std::unique_ptr<BlockTransport> makeTransport(Backend backend, runtime::World& world,
                                              const TransportOptions& options = {});

}  // namespace haloex::transport
