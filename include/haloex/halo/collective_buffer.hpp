#pragma once
/// @file
/// A collective allocator for arrays the halo backends may need in special
/// memory (library haloex_transports), in the spirit of cuDecomp's
/// cudecompMalloc: every rank asks for its own count, every rank gets the
/// maximum over the ranks, in the memory the backend wants
/// (transport::ArrayMemory) --
///   Reference, Staged in host memory   host memory (std::vector-like)
///   Staged in device memory, Ipc, Nccl cudaMalloc'd device memory, in whole
///                                      2 MiB units (CUDA IPC can export it)
///   Nvshmem                            NVSHMEM symmetric memory (nvshmem_malloc:
///                                      the same size on every rank), so that
///                                      peers can address it
///   NcclDevice                         an NCCL window with load/store peer
///                                      pointers (halo/peer_memory.hpp)
/// gather/scatterAdd (halo/particle_halo.hpp) work on any array of the
/// backend's memory space; the coordinate/force exchange's fast paths
/// (halo/coordinate_force_halo.hpp) and kernels that store into a peer's
/// array (the device-side halo API) need this memory.
///
/// Collective: construction, resize(), reserve() and destruction are calls
/// every rank of the World makes, in the same order. Growth is geometric (at
/// least half the current capacity again) and preserves the contents up to
/// the old size. Device memory: select the rank's GPU first
/// (cuda::selectDevice); NVSHMEM is initialised on first use.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "haloex/halo/backend.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/transport/block_transport.hpp"
#include "haloex/transport/coordinate_force_exchange.hpp"

namespace haloex {

/// Host, Device, NvshmemSymmetric, NcclWindow, IpcWindow.
using CollectiveMemory = transport::ArrayMemory;

/// The memory `backend` needs in `space` (Auto must be resolved first).
/// Throws InvalidInput for a space the backend does not support and for a
/// backend this build lacks (with unavailableReason()).
CollectiveMemory collectiveMemoryFor(Backend backend, transport::MemorySpace space);
/// The memory `transport`'s coordinate/force exchange needs the caller's arrays in.
CollectiveMemory collectiveMemoryFor(const transport::BlockTransport& transport);

template <class T>
class CollectiveBuffer;

/// Untyped bytes; CollectiveBuffer<T> is the typed face.
class CollectiveBytes {
public:
    /// Collective; allocates nothing yet. `what` names the array in errors.
    CollectiveBytes(runtime::World& world, CollectiveMemory memory, std::string what = "a collective buffer");
    ~CollectiveBytes();                                      ///< collective for NVSHMEM symmetric memory
    CollectiveBytes(CollectiveBytes&&) noexcept;             ///< takes the other's allocation
    CollectiveBytes& operator=(CollectiveBytes&&) noexcept;  ///< frees this one's (collective), takes the other's
    CollectiveBytes(const CollectiveBytes&) = delete;
    CollectiveBytes& operator=(const CollectiveBytes&) = delete;

    /// Collective: capacity() becomes at least the maximum of `bytes` over
    /// the ranks (the same on every rank). Returns whether it reallocated
    /// (data() then changed; the first min(old, new) bytes were kept).
    bool reserve(std::size_t bytes);
    void* data() const { return data_; }                 ///< this rank's allocation (nullptr before reserve)
    std::size_t capacity() const { return capacity_; }   ///< bytes allocated, the same on every rank
    CollectiveMemory memory() const { return memory_; }  ///< the memory it is in
    /// Changes with every reallocation (unique within the process; 0: none yet).
    std::uint64_t allocation() const { return allocation_; }
    /// The allocation as a backend's exchange sees it: with the peers' copies
    /// for NVSHMEM symmetric memory and windows.
    transport::SharedArray shared() const;

    /// Blocking copies between host memory and bytes [offset, offset + bytes)
    /// of this buffer, whatever memory it is in (device copies are enqueued
    /// on `stream`, after the work already there, and waited for). Not collective.
    void copyFromHost(const void* host, std::size_t bytes, std::size_t offset = 0,
                      transport::StreamHandle stream = nullptr);
    /// The other direction of copyFromHost: bytes [offset, offset + bytes) into `host`.
    void copyToHost(void* host, std::size_t bytes, std::size_t offset = 0,
                    transport::StreamHandle stream = nullptr) const;

private:
    template <class>
    friend class CollectiveBuffer;
    // reserve() without its reduction: `largest` is already the maximum over
    // the ranks, the same on every rank (resizeTogether's one reduction for
    // several buffers). Collective where it reallocates.
    bool reserveAgreed(std::size_t largest);

    struct Storage;
    runtime::World* world_;
    CollectiveMemory memory_;
    std::string what_;
    std::unique_ptr<Storage> storage_;
    void* data_ = nullptr;
    std::size_t capacity_ = 0;
    std::uint64_t allocation_ = 0;
};

/// An array of T that every rank allocates alike (the maximum of the ranks'
/// sizes), in the memory a backend needs (CollectiveMemory).
template <class T>
class CollectiveBuffer {
    static_assert(std::is_trivially_copyable_v<T>, "collective buffers hold trivially copyable elements");

public:
    /// Collective: every rank passes its own `count`; all get max(count).
    CollectiveBuffer(runtime::World& world, CollectiveMemory memory, std::size_t count,
                     std::string what = "a collective buffer")
        : bytes_(world, memory, std::move(what)) {
        resize(count);
    }

    /// Collective: size() becomes `count` on this rank; the capacity (the
    /// maximum over the ranks) grows geometrically when needed.
    void resize(std::size_t count) {
        bytes_.reserve(count * sizeof(T));
        size_ = count;
    }
    /// Collective: room for `count` elements on every rank, size unchanged.
    void reserve(std::size_t count) { bytes_.reserve(count * sizeof(T)); }

    T* data() const { return static_cast<T*>(bytes_.data()); }  ///< this rank's elements
    std::size_t size() const { return size_; }                  ///< elements in use on this rank

    /// Blocking copies of `count` elements from/to host memory, starting at
    /// element `first` (see CollectiveBytes). Not collective.
    void copyFromHost(const T* host, std::size_t count, std::size_t first = 0,
                      transport::StreamHandle stream = nullptr) {
        bytes_.copyFromHost(host, count * sizeof(T), first * sizeof(T), stream);
    }
    /// The other direction of copyFromHost: `count` elements from `first` on into `host`.
    void copyToHost(T* host, std::size_t count, std::size_t first = 0, transport::StreamHandle stream = nullptr) const {
        bytes_.copyToHost(host, count * sizeof(T), first * sizeof(T), stream);
    }
    std::size_t capacity() const { return bytes_.capacity() / sizeof(T); }  ///< elements allocated (every rank alike)
    CollectiveMemory memory() const { return bytes_.memory(); }             ///< the memory it is in
    transport::SharedArray shared() const { return bytes_.shared(); }       ///< as a backend's exchange sees it

private:
    template <class... U>
    friend void resizeTogether(runtime::World& world, std::size_t count, CollectiveBuffer<U>&... buffers);
    // resize() where `largest` is the maximum of the ranks' counts, the same
    // on every rank (resizeTogether): no reduction of its own.
    void resizeAgreed(std::size_t count, std::size_t largest) {
        bytes_.reserveAgreed(largest * sizeof(T));
        size_ = count;
    }

    CollectiveBytes bytes_;
    std::size_t size_ = 0;
};

/// Collective: buffers.resize(count) each, as the calls in turn would make
/// them, with one reduction for all instead of one each (every rank passes
/// its own count and the same buffers in the same order): e.g. the
/// coordinates and forces resized at every search.
template <class... U>
void resizeTogether(runtime::World& world, std::size_t count, CollectiveBuffer<U>&... buffers) {
    const auto largest = static_cast<std::size_t>(
        world.allReduceValue<std::int64_t>(static_cast<std::int64_t>(count), runtime::ReduceOp::Max));
    (buffers.resizeAgreed(count, largest), ...);
}

/// For arrays a backend (or a transport already made) exchanges; collective.
template <class T>
CollectiveBuffer<T> allocateCollective(runtime::World& world, Backend backend, transport::MemorySpace space,
                                       std::size_t count, std::string what = "a collective buffer") {
    return CollectiveBuffer<T>(world, collectiveMemoryFor(backend, space), count, std::move(what));
}
/// For arrays `transport`'s coordinate/force exchange works on (its
/// arrayMemory()); collective.
template <class T>
CollectiveBuffer<T> allocateCollective(runtime::World& world, const transport::BlockTransport& transport,
                                       std::size_t count, std::string what = "a collective buffer") {
    return CollectiveBuffer<T>(world, collectiveMemoryFor(transport), count, std::move(what));
}

}  // namespace haloex
