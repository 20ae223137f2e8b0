// The providers of peer-addressable memory (halo/peer_memory.hpp): CUDA IPC
// (haloex_cuda), NVSHMEM symmetric memory with nvshmem_ptr peers
// (haloex_nvshmem, host side) and an NCCL 2.28 device-API window with LSA
// peers (haloex_nccl, src/transport/nccl/nccl_device_peer_memory.cu).
#include "haloex/halo/peer_memory.hpp"

#include <algorithm>
#include <cstdint>
#include <fmt/format.h>

#include "haloex/config.hpp"
#include "haloex/core/error.hpp"

#if HALOEX_HAVE_CUDA && defined(HALOEX_LINKED_CUDA)
#include "haloex/cuda/ipc_peer_memory.hpp"
#define HALOEX_PEER_MEMORY_WITH_IPC 1
#else
#define HALOEX_PEER_MEMORY_WITH_IPC 0
#endif
#if HALOEX_HAVE_NCCL_DEVICE && defined(HALOEX_LINKED_NCCL)
#include "nccl_device_peer_memory.hpp"
#define HALOEX_PEER_MEMORY_WITH_NCCL_DEVICE 1
#else
#define HALOEX_PEER_MEMORY_WITH_NCCL_DEVICE 0
#endif
#if HALOEX_HAVE_NVSHMEM && defined(HALOEX_LINKED_NVSHMEM)
#include "haloex/cuda/blocking_ops.hpp"
#include "haloex/nvshmem/symmetric_memory.hpp"
#define HALOEX_PEER_MEMORY_WITH_NVSHMEM 1
#else
#define HALOEX_PEER_MEMORY_WITH_NVSHMEM 0
#endif

namespace haloex {
namespace {

#if HALOEX_PEER_MEMORY_WITH_NVSHMEM
class NvshmemPeerMemory final : public PeerMemory {
public:
    NvshmemPeerMemory(runtime::World& world, std::size_t bytes, const std::string& what)
        : bytes_(checkedBytes(world, bytes, what)), allocation_(world, std::max<std::size_t>(bytes_, 1), what) {}

    std::string describe() const override {
        return "nvshmem: a symmetric allocation, peers through nvshmem_ptr (NVLink/P2P load/store)";
    }
    std::size_t bytes() const override { return bytes_; }
    void* localBase() const override { return allocation_.data(); }
    void* peerBase(int peer) override { return allocation_.peerData(peer); }

private:
    // The maximum over the ranks; NVSHMEM's PEs are processes, so ranks that
    // are threads of one process cannot be its PEs.
    static std::size_t checkedBytes(runtime::World& world, std::size_t bytes, const std::string& what) {
        if (world.kind() == "threads" && world.size() > 1) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("{}: NVSHMEM needs one process per rank (mpirun), but these {} ranks are threads "
                                   "of one process; use the ipc backend there",
                                   what, world.size()));
        }
        return static_cast<std::size_t>(
            world.allReduceValue<std::int64_t>(static_cast<std::int64_t>(bytes), runtime::ReduceOp::Max));
    }
    std::size_t bytes_;
    nvshmem::SymmetricAllocation allocation_;  // collective; zero-filled
};
#endif

}  // namespace

bool hasPeerMemory(Backend backend) {
    switch (backend) {
        // NOLINTNEXTLINE(bugprone-branch-clone): the values differ with the build's transports
        case Backend::Ipc: return HALOEX_PEER_MEMORY_WITH_IPC != 0;
        case Backend::Nvshmem: return HALOEX_PEER_MEMORY_WITH_NVSHMEM != 0;
        case Backend::NcclDevice: return HALOEX_PEER_MEMORY_WITH_NCCL_DEVICE != 0;
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
#if HALOEX_PEER_MEMORY_WITH_IPC
        case Backend::Ipc: return cuda::makeIpcPeerMemory(world, bytes, what);
#endif
#if HALOEX_PEER_MEMORY_WITH_NVSHMEM
        case Backend::Nvshmem: return std::make_unique<NvshmemPeerMemory>(world, bytes, what);
#endif
#if HALOEX_PEER_MEMORY_WITH_NCCL_DEVICE
        case Backend::NcclDevice: return nccl::makeNcclDevicePeerMemory(world, bytes, what);
#endif
        default: break;
    }
    (void)world;
    (void)bytes;
    throwError(ErrorKind::InvalidInput,
               fmt::format("{}: the {} backend has no memory that peers address with loads and stores; the device "
                           "halo view needs ipc (one node), nccl-device or nvshmem",
                           what, toString(backend)));
}

}  // namespace haloex
