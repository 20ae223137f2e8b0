#pragma once
/// @file
/// Device memory that the other ranks address with ordinary loads and
/// stores: the seam behind the device halo view (halo/device_halo.hpp), the
/// collective allocator's windows and the nccl-device transport. One
/// provider per mechanism --
///   - Ipc: cudaMalloc'd memory shared through CUDA IPC handles (one node;
///     ranks that are threads of one process use the pointer itself);
///   - Nvshmem: an NVSHMEM symmetric allocation; peers through nvshmem_ptr()
///     (host side only: the user's code needs no NVSHMEM device library);
///   - NcclDevice: an ncclMemAlloc'd window registered with an NCCL 2.28
///     communicator; peers through ncclGetLsaPointer, resolved once inside
///     haloex (the user's code includes no NCCL header). One process per
///     GPU; never NVLink multicast.
///
/// A further provider implements PeerMemory and adds its case to
/// allocatePeerMemory() (src/transport/peer_memory.cpp).
#include <cstddef>
#include <memory>
#include <string>

#include "haloex/runtime/world.hpp"
#include "haloex/transport/backend.hpp"

namespace haloex::transport {

/// One allocation per rank, `bytes()` on every rank (the maximum asked for),
/// zero-filled, on the rank's current CUDA device. Construction and
/// destruction are collective over the World (every rank, the same order).
class PeerMemory {
public:
    virtual ~PeerMemory() = default;
    /// The provider and how peers are reached, for logs.
    virtual std::string describe() const = 0;
    /// The size of every rank's allocation.
    virtual std::size_t bytes() const = 0;
    /// This rank's allocation (device memory).
    virtual void* localBase() const = 0;
    /// Rank `peer`'s allocation as this rank's kernels address it with loads
    /// and stores (this rank's own for peer == rank()), or nullptr where no
    /// load/store path exists (another node, no peer access between the
    /// GPUs). Not collective; may map on first use.
    virtual void* peerBase(int peer) = 0;
};

/// Collective: every rank asks for its own `bytes` and gets the maximum over
/// the ranks. `what` names the memory in errors. Throws InvalidInput for a
/// backend without load/store peer memory (Reference, Staged, Nccl; the
/// reason names what to use instead) and for one this library lacks.
std::unique_ptr<PeerMemory> allocatePeerMemory(Backend backend, runtime::World& world, std::size_t bytes,
                                               const std::string& what);

/// Whether allocatePeerMemory() supports `backend` in this library (Ipc with
/// CUDA, Nvshmem with NVSHMEM, NcclDevice with NCCL 2.28's device API).
bool hasPeerMemory(Backend backend);

}  // namespace haloex::transport
