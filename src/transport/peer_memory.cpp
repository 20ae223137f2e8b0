// allocatePeerMemory (transport/peer_memory.hpp): the providers are in the
// libraries of their backends (entry_points.hpp) -- CUDA IPC (haloex_cuda),
// NVSHMEM symmetric memory with nvshmem_ptr peers (haloex_nvshmem) and an NCCL
// 2.28 device-API window with LSA peers (haloex_nccl_device).
#include "haloex/transport/peer_memory.hpp"

#include <fmt/format.h>

#include "entry_points.hpp"
#include "haloex/core/error.hpp"

namespace haloex::transport {

bool hasPeerMemory(Backend backend) {
    switch (backend) {
        case Backend::Ipc:
        case Backend::Nvshmem:
        case Backend::NcclDevice: return unavailableReason(backend).empty();
        default: return false;
    }
}

std::unique_ptr<PeerMemory> allocatePeerMemory(Backend backend, runtime::World& world, std::size_t bytes,
                                               const std::string& what) {
    if (const std::string why = unavailableReason(backend); !why.empty()) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{}: the {} backend is not available: {}", what, toString(backend), why));
    }
    switch (backend) {
        case Backend::Ipc: return entry::makeIpcPeerMemory(world, bytes, what);
        case Backend::Nvshmem: return entry::makeNvshmemPeerMemory(world, bytes, what);
        case Backend::NcclDevice: return entry::makeNcclWindow(world, bytes, what);
        default: break;
    }
    throwError(ErrorKind::InvalidInput,
               fmt::format("{}: the {} backend has no memory that peers address with loads and stores; the device "
                           "halo view needs ipc (one node), nccl-device or nvshmem",
                           what, toString(backend)));
}

}  // namespace haloex::transport
