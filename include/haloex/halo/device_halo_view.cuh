#pragma once
/// @file
/// The device halo view's device functions: store into a neighbour's receive
/// window, signal it, wait (with a time limit) for a neighbour's signal.
/// Header-only CUDA with no NVSHMEM: include it in your own .cu file and
/// compile it like any other (no -rdc, no device link). The view comes from
/// DeviceHalo (device_halo.hpp); docs/api.md ("The device halo view") has
/// the ordering rules and an example.
///
/// @code
///   step g (g = 1, 2, ...), per send link l and receive link r:
///     T* out = haloex::device::sendSlot<T>(view, l, g);   // or store(view, l, g, i, value)
///     ... the block's threads store into out[...] ...
///     haloex::device::signalBlock(view, l, g);            // __syncthreads, then one release store
///     if (!haloex::device::waitBlock(view, r, g)) return; // timed out: the host reports it
///     const T* in = haloex::device::recvSlot<T>(view, r, g);
/// @endcode
#include <cstddef>
#include <cstdint>

#include "haloex/cuda/check.hpp"
#include "haloex/detail/cuda/memory_order.cuh"
#include "haloex/halo/device_halo.hpp"

namespace haloex::device {

/// Where the data of generation g goes in the peer's window of send link `link`.
template <class T>
__device__ __forceinline__ T* sendSlot(const DeviceHaloView& view, int link, std::uint64_t generation) {
    const DeviceHaloView::Send& s = view.sends[link];
    return reinterpret_cast<T*>(static_cast<char*>(s.window) +
                                (generation % static_cast<std::uint64_t>(s.slots)) * s.slotBytes);
}

/// Where the data of generation g arrives in this rank's window of receive link `link`.
template <class T>
__device__ __forceinline__ const T* recvSlot(const DeviceHaloView& view, int link, std::uint64_t generation) {
    const DeviceHaloView::Recv& r = view.recvs[link];
    return reinterpret_cast<const T*>(static_cast<const char*>(r.window) +
                                      (generation % static_cast<std::uint64_t>(r.slots)) * r.slotBytes);
}

/// One element straight into the peer's window (an ordinary store over
/// NVLink/P2P, or into this GPU's memory for a rank that shares it).
/// `index` counts elements of T within the slot: index * sizeof(T) must stay
/// below the link's slotBytes.
template <class T>
__device__ __forceinline__ void store(const DeviceHaloView& view, int link, std::uint64_t generation, std::size_t index,
                                      const T& value) {
    sendSlot<T>(view, link, generation)[index] = value;
}

/// Publishes generation g on send link `link`: one release store at system
/// scope into the peer's signal word. The peer that sees >= g also sees every
/// store this thread made before it, and every store of other threads that a
/// __syncthreads() (or a stronger synchronisation) ordered before it.
/// Call it from one thread; use signalBlock() when the whole block stored.
__device__ __forceinline__ void signal(const DeviceHaloView& view, int link, std::uint64_t generation) {
    cuda::releaseStoreSys(view.sends[link].signal, generation);
}

/// Every thread of the block calls it: __syncthreads(), then thread 0 signals.
__device__ __forceinline__ void signalBlock(const DeviceHaloView& view, int link, std::uint64_t generation) {
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) signal(view, link, generation);
}

/// Whether a wait of this halo has already timed out (on this rank).
__device__ __forceinline__ bool timedOut(const DeviceHaloView& view) {
    return *reinterpret_cast<volatile int*>(view.abortFlag) != 0;
}

namespace detail {
__device__ inline void reportTimeout(const DeviceHaloView& view, int link, std::uint64_t expected, std::uint64_t seen,
                                     std::uint64_t waitedNs) {
    DeviceWaitReport* d = view.report;
    if (atomicCAS(&d->claimed, 0, 1) == 0) {
        d->rank = view.rank;
        d->peer = view.recvs[link].peer;
        d->link = link;
        d->tag = view.recvs[link].tag;
        d->block = static_cast<int>(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
        d->thread = static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
        d->expected = expected;
        d->seen = seen;
        d->waitedNs = waitedNs;
        __threadfence_system();
        *reinterpret_cast<volatile int*>(&d->ready) = 1;
    }
    atomicExch(view.abortFlag, 1);
}
}  // namespace detail

/// Waits until receive link `link` has generation g (signal >= g; acquire at
/// system scope: the peer's stores before its signal are then visible to
/// this thread). Returns false when the view's time limit passed first (the
/// report records who waited for whom and the values seen, and every other
/// wait of this halo gives up at once) or when another wait has already timed
/// out. On false, skip the work that needed the data and do not signal:
/// the host reports the timeout (DeviceHalo::pendingTimeout).
__device__ inline bool wait(const DeviceHaloView& view, int link, std::uint64_t generation) {
    const std::uint64_t* word = view.recvs[link].signal;
    std::uint64_t seen = cuda::loadAcquire(word, true);
    if (seen >= generation) return true;
    const std::uint64_t start = cuda::globalTimerNs();
    for (unsigned polls = 1;; ++polls) {
        seen = cuda::loadRelaxed(word, true);
        if (seen >= generation) {
            cuda::loadAcquire(word, true);
            return true;
        }
        if ((polls & 255u) == 0) {
            if (timedOut(view)) return false;
            const std::uint64_t waited = cuda::globalTimerNs() - start;
            if (waited > view.timeoutNs) {
                detail::reportTimeout(view, link, generation, seen, waited);
                return false;
            }
        }
    }
}

/// Every thread of the block calls it: thread 0 waits, the block learns the
/// outcome (and, through the barrier, sees what thread 0's acquire made visible).
__device__ __forceinline__ bool waitBlock(const DeviceHaloView& view, int link, std::uint64_t generation) {
    int ok = 1;
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) ok = wait(view, link, generation) ? 1 : 0;
    return __syncthreads_and(ok) != 0;
}

/// Host side: loads a kernel's code now. With CUDA's lazy loading (the
/// default), the first launch of a kernel loads it, and that may synchronise
/// the whole context; with ranks as threads of one process, a peer's kernel
/// may then already wait for this rank's -- which cannot load until that one
/// ends. Call it for every kernel that uses the view before constructing the
/// DeviceHalo (as examples/fused_stencil does).
template <class Kernel>
inline void loadKernelNow(Kernel* kernel) {
    cudaFuncAttributes attributes{};
    HALOEX_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
}

}  // namespace haloex::device
