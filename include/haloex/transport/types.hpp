#pragma once
/// @file
/// The vocabulary of the transport layer: streams, memory spaces, blocks, the
/// memory a backend's fast path needs, the caller's arrays as an exchange sees
/// them, and the counters an exchange keeps.
#include <cstddef>
#include <cstdint>
#include <functional>

namespace haloex::transport {

/// A cudaStream_t, or null for host backends (which finish before returning).
using StreamHandle = void*;

/// Where the arrays a backend moves live.
enum class MemorySpace {
    Host,    ///< host memory
    Device,  ///< the current GPU's memory
};

/// One block of an exchange: `sendBytes` bytes at `send` go to rank `dest`
/// while `recvBytes` bytes from rank `src` land at `recv` (a rank of -1 means
/// nothing to send, or to receive).
struct BlockExchange {
    const void* send = nullptr;  ///< the bytes sent
    std::size_t sendBytes = 0;   ///< how many
    int dest = -1;               ///< to this rank (-1: nothing sent)
    void* recv = nullptr;        ///< where the received bytes land
    std::size_t recvBytes = 0;   ///< how many
    int src = -1;                ///< from this rank (-1: nothing received)
};

/// What the memory of a caller's array must be for a backend's fast path
/// (peers may load from or store into it): the halo API's collective
/// allocator (halo/collective_buffer.hpp) turns this into an allocation.
enum class ArrayMemory {
    Host,              ///< plain host memory
    Device,            ///< cudaMalloc'd device memory, in whole 2 MiB units (CUDA IPC can export it)
    NvshmemSymmetric,  ///< nvshmem_malloc: the same address range on every rank
    NcclWindow,        ///< an NCCL 2.28 window with load/store (LSA) peer pointers
    IpcWindow,         ///< CUDA IPC peer memory (the nccl-device kernels over IPC: tests)
};

/// A caller's array as an exchange sees it (halo::CollectiveBuffer::shared()).
struct SharedArray {
    void* data = nullptr;   ///< this rank's copy
    std::size_t bytes = 0;  ///< its capacity
    /// Changes whenever the memory is reallocated (unique within the process):
    /// an exchange that mapped the array for its peers maps it again.
    std::uint64_t allocation = 0;
    /// Rank `rank`'s copy as this rank's kernels address it with loads and
    /// stores, or nullptr where there is no load/store path to it. Empty for
    /// memory peers cannot address (plain host or device memory).
    std::function<void*(int rank)> peer;
};

/// Counters an exchange keeps so runs can report what the host did.
struct TransportCounters {
    std::int64_t forwardCalls = 0;  ///< forward exchanges (coordinates, gathers)
    std::int64_t reverseCalls = 0;  ///< reverse exchanges (forces, scatter-adds)
    std::int64_t hostSyncs = 0;     ///< host waits on device work or on peers inside forward/reverse
};

}  // namespace haloex::transport
