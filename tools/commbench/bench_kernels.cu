// GPU-initiated micro-benchmark kernels. Ping-pongs: the initiator times
// `iterations` round trips with the global timer; the responder mirrors it.
#include <nvshmem.h>
#include <nvshmemx.h>

#include "bench_kernels.hpp"
#include "device_sync.cuh"
#include "haloex/cuda/check.hpp"

namespace haloex::commbench {
namespace {

using nvshmem_detail::WaitContext;
using nvshmem_detail::waitSignalGe;

constexpr int kBlockThreads = 256;

__device__ __forceinline__ WaitContext context(const PingPongArgs& a) {
    return WaitContext{a.wait.diagnostics, a.wait.abortFlag, a.wait.timeoutNs, a.wait.myPe, 0};
}

template <Scope S>
__device__ __forceinline__ void putSignal(const PingPongArgs& a, std::uint64_t value) {
    if constexpr (S == Scope::Thread) {
        nvshmem_putmem_signal_nbi(a.data, a.source, a.bytes, a.signal, value, NVSHMEM_SIGNAL_SET, a.peer);
    } else if constexpr (S == Scope::Warp) {
        nvshmemx_putmem_signal_nbi_warp(a.data, a.source, a.bytes, a.signal, value, NVSHMEM_SIGNAL_SET, a.peer);
    } else {
        nvshmemx_putmem_signal_nbi_block(a.data, a.source, a.bytes, a.signal, value, NVSHMEM_SIGNAL_SET, a.peer);
    }
}

template <Scope S>
__device__ __forceinline__ void putNbi(void* dest, const void* source, std::size_t bytes, int peer) {
    if constexpr (S == Scope::Thread) {
        nvshmem_putmem_nbi(dest, source, bytes, peer);
    } else if constexpr (S == Scope::Warp) {
        nvshmemx_putmem_nbi_warp(dest, source, bytes, peer);
    } else {
        nvshmemx_putmem_nbi_block(dest, source, bytes, peer);
    }
}

// The barrier of the threads that take part at scope S.
template <Scope S>
__device__ __forceinline__ void scopeBarrier() {
    if constexpr (S == Scope::Block) {
        __syncthreads();
    } else if constexpr (S == Scope::Warp) {
        __syncwarp();
    }
}

// Thread 0 waits (with the time limit); the threads of scope S learn the outcome.
template <Scope S = Scope::Block>
__device__ bool blockWait(const PingPongArgs& a, std::uint64_t value, int* ok) {
    if (threadIdx.x == 0) *ok = *ok && waitSignalGe(a.signal, value, context(a), 0, static_cast<int>(value), a.peer);
    scopeBarrier<S>();
    return *ok != 0;
}

template <Scope S>
__global__ void putLatencyKernel(PingPongArgs a) {
    std::uint64_t t0 = 0;
    if (threadIdx.x == 0) t0 = nvshmem_detail::globalTimerNs();
    for (int i = 0; i < a.iterations; ++i) {
        putNbi<S>(a.data, a.source, a.bytes, a.peer);
        __syncthreads();
        if (threadIdx.x == 0) nvshmem_quiet();
        __syncthreads();
    }
    if (threadIdx.x == 0) *a.elapsedNs = nvshmem_detail::globalTimerNs() - t0;
}

template <Scope S>
__global__ void putSignalPingPongKernel(PingPongArgs a) {
    __shared__ int ok;
    if (threadIdx.x == 0) ok = 1;
    __syncthreads();
    const std::uint64_t t0 = nvshmem_detail::globalTimerNs();
    for (int i = 1; i <= a.iterations; ++i) {
        const auto value = static_cast<std::uint64_t>(i);
        if (a.initiator) {
            putSignal<S>(a, value);
            if (!blockWait(a, value, &ok)) break;
        } else {
            if (!blockWait(a, value, &ok)) break;
            putSignal<S>(a, value);
        }
    }
    if (a.initiator && threadIdx.x == 0) *a.elapsedNs = nvshmem_detail::globalTimerNs() - t0;
}

__device__ __forceinline__ void storeWords(void* dst, const void* src, std::size_t bytes) {
    auto* d = static_cast<unsigned long long*>(dst);
    const auto* s = static_cast<const unsigned long long*>(src);
    for (std::size_t w = threadIdx.x; w < bytes / 8; w += blockDim.x) d[w] = s[w];
}

// Stores by the threads of scope S (one thread, one warp or one block).
template <Scope S>
__global__ void directStorePingPongKernel(PingPongArgs a) {
    __shared__ int ok;
    if (threadIdx.x == 0) ok = 1;
    __syncthreads();
    const std::uint64_t t0 = nvshmem_detail::globalTimerNs();
    for (int i = 1; i <= a.iterations; ++i) {
        const auto value = static_cast<std::uint64_t>(i);
        if (!a.initiator && !blockWait<S>(a, value, &ok)) break;
        storeWords(a.peerData, a.source, a.bytes);
        scopeBarrier<S>();  // every thread's stores before the flag (release is cumulative)
        if (threadIdx.x == 0) nvshmem_detail::releaseStoreSys(a.peerSignal, value);
        if (a.initiator && !blockWait<S>(a, value, &ok)) break;
    }
    if (a.initiator && threadIdx.x == 0) *a.elapsedNs = nvshmem_detail::globalTimerNs() - t0;
}

__global__ void tmaPingPongKernel(PingPongArgs a) {
    __shared__ int ok;
    __shared__ alignas(128) unsigned char staging[kTmaMaxBytes];
    if (threadIdx.x == 0) ok = 1;
    __syncthreads();
    const std::uint64_t t0 = nvshmem_detail::globalTimerNs();
    const auto bytes = static_cast<unsigned>(a.bytes);
    for (int i = 1; i <= a.iterations; ++i) {
        const auto value = static_cast<std::uint64_t>(i);
        if (!a.initiator && !blockWait(a, value, &ok)) break;
        // Pack into shared memory (what a halo kernel does), then one bulk store.
        storeWords(staging, a.source, a.bytes);
        nvshmem_detail::fenceProxyAsyncSharedCta();
        __syncthreads();
        if (threadIdx.x == 0) {
            asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(a.peerData),
                         "r"(static_cast<unsigned>(__cvta_generic_to_shared(staging))), "r"(bytes)
                         : "memory");
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
            asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");  // written, not only read
            nvshmem_detail::fenceProxyAsyncGlobal();
            nvshmem_detail::releaseStoreSys(a.peerSignal, value);
        }
        if (a.initiator && !blockWait(a, value, &ok)) break;
        __syncthreads();  // the staging buffer is rewritten next round
    }
    if (a.initiator && threadIdx.x == 0) *a.elapsedNs = nvshmem_detail::globalTimerNs() - t0;
}

__device__ __forceinline__ void blockShare(std::size_t bytes, std::size_t& offset, std::size_t& count) {
    std::size_t per = (bytes + gridDim.x - 1) / gridDim.x;
    per = (per + 15) / 16 * 16;
    offset = min(bytes, static_cast<std::size_t>(blockIdx.x) * per);
    count = min(per, bytes - offset);
}

__global__ void putBandwidthKernel(BandwidthArgs a) {
    std::size_t offset, count;
    blockShare(a.bytes, offset, count);
    for (int i = 0; i < a.iterations && count > 0; ++i) {
        nvshmemx_putmem_nbi_block(static_cast<char*>(a.dest) + offset, static_cast<const char*>(a.source) + offset,
                                  count, a.peer);
    }
    __syncthreads();
    if (threadIdx.x == 0) nvshmem_quiet();
}

__global__ void storeBandwidthKernel(BandwidthArgs a) {
    std::size_t offset, count;
    blockShare(a.bytes, offset, count);
    auto* dst = static_cast<char*>(a.dest) + offset;
    const auto* src = static_cast<const char*>(a.source) + offset;
    for (int i = 0; i < a.iterations; ++i) {
        const std::size_t vectors = count / 16;
        for (std::size_t v = threadIdx.x; v < vectors; v += blockDim.x) {
            reinterpret_cast<uint4*>(dst)[v] = reinterpret_cast<const uint4*>(src)[v];
        }
        for (std::size_t w = vectors * 2 + threadIdx.x; w < count / 8; w += blockDim.x) {
            reinterpret_cast<unsigned long long*>(dst)[w] = reinterpret_cast<const unsigned long long*>(src)[w];
        }
    }
    __threadfence_system();
}

// Put b of a batch goes to slot (b * threads + thread): the threads of a warp
// write neighbouring words for every b, so batch sizes differ only in how
// many puts share one quiet. (Slot thread * batch + b, used before, made the
// warp's stores 8 * batch bytes apart: batch 32 then measured strided against
// coalesced stores, not batching.)
__global__ void messageRateKernel(MessageRateArgs a) {
    const long long threads = static_cast<long long>(gridDim.x) * blockDim.x;
    const long long thread = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    auto* dest = static_cast<unsigned long long*>(a.dest);
    for (int i = 0; i < a.iterations; ++i) {
        for (int b = 0; b < a.batch; ++b) {
            const int slot = static_cast<int>((b * threads + thread) % a.slots);
            nvshmem_putmem_nbi(dest + slot, a.source, 8, a.peer);
        }
        nvshmem_quiet();
    }
}

template <class Kernel>
void launchScoped(Kernel thread, Kernel warp, Kernel block, Scope scope, const PingPongArgs& a, cudaStream_t stream) {
    Kernel k = scope == Scope::Thread ? thread : scope == Scope::Warp ? warp : block;
    k<<<1, threadsOf(scope), 0, stream>>>(a);
    HALOEX_CUDA_CHECK_LAUNCH();
}

}  // namespace

const char* toString(Scope s) {
    switch (s) {
        case Scope::Thread: return "thread";
        case Scope::Warp: return "warp";
        case Scope::Block: return "block";
    }
    return "?";
}

int threadsOf(Scope s) { return s == Scope::Thread ? 1 : s == Scope::Warp ? 32 : kBlockThreads; }

void launchPutLatency(const PingPongArgs& a, Scope scope, cudaStream_t stream) {
    launchScoped(putLatencyKernel<Scope::Thread>, putLatencyKernel<Scope::Warp>, putLatencyKernel<Scope::Block>, scope,
                 a, stream);
}

void launchPutSignalPingPong(const PingPongArgs& a, Scope scope, cudaStream_t stream) {
    launchScoped(putSignalPingPongKernel<Scope::Thread>, putSignalPingPongKernel<Scope::Warp>,
                 putSignalPingPongKernel<Scope::Block>, scope, a, stream);
}

void launchDirectStorePingPong(const PingPongArgs& a, Scope scope, cudaStream_t stream) {
    launchScoped(directStorePingPongKernel<Scope::Thread>, directStorePingPongKernel<Scope::Warp>,
                 directStorePingPongKernel<Scope::Block>, scope, a, stream);
}

void launchTmaPingPong(const PingPongArgs& a, cudaStream_t stream) {
    tmaPingPongKernel<<<1, kBlockThreads, 0, stream>>>(a);
    HALOEX_CUDA_CHECK_LAUNCH();
}

void launchPutBandwidth(const BandwidthArgs& a, cudaStream_t stream) {
    putBandwidthKernel<<<a.blocks, kBlockThreads, 0, stream>>>(a);
    HALOEX_CUDA_CHECK_LAUNCH();
}

void launchStoreBandwidth(const BandwidthArgs& a, cudaStream_t stream) {
    storeBandwidthKernel<<<a.blocks, kBlockThreads, 0, stream>>>(a);
    HALOEX_CUDA_CHECK_LAUNCH();
}

void launchMessageRate(const MessageRateArgs& a, cudaStream_t stream) {
    messageRateKernel<<<a.blocks, a.warpsPerBlock * 32, 0, stream>>>(a);
    HALOEX_CUDA_CHECK_LAUNCH();
}

int multiprocessors() {
    int device = 0, sms = 0;
    HALOEX_CUDA_CHECK(cudaGetDevice(&device));
    HALOEX_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return sms;
}

}  // namespace haloex::commbench
