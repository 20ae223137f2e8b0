#pragma once
// The fused, GPU-initiated halo exchange kernels (docs/nvshmem.md), generic
// over what they move and over how they reach the peers:
//   T      the element type: Vec3f (coordinates forward with the periodic
//          shift, forces added back) or any arithmetic type (no shift, added
//          with atomicAdd) -- ExchangeElement<T> says how;
//   Peers  the peer-access policy. Every policy reaches a peer on NVLink/P2P
//          through load/store-accessible pointers (NVSHMEM's nvshmem_ptr,
//          NCCL's LSA pointers, CUDA IPC mappings), so the direct and bulk
//          (TMA) paths are the same code for all; only a policy with
//          kCanPut also has the put-with-signal path (what InfiniBand needs).
//          LoadStorePeers (below) has none and needs no NVSHMEM, so a
//          translation unit without -rdc can instantiate it.
// One launch moves every pulse's forward data (fusedForward) or reverse data
// (fusedReverse), with per-pulse signals instead of host synchronisation. The
// three paths are the named device functions forwardDirect / forwardBulk /
// Peers::putWithSignal and reverseDirect / reverseBulk (+ the put's staging).
#include <cstddef>
#include <cstdint>

#include <algorithm>
#include <type_traits>

#include "device_sync.cuh"
#include "fused_args.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/detail/cuda/dependent_launch.cuh"

namespace haloex::nvshmem_detail {

// How an element travels: forward with the pulse's periodic shift applied
// (only where the plan shifts, so -0.0f keeps its bits as in the reference),
// reverse added into the owner's element.
template <class T>
struct ExchangeElement {  // arithmetic types: a scalar field has no periodic shift
    __device__ static T shifted(T v, int /*dim*/, int /*shiftSign*/, float /*shift*/) { return v; }
    __device__ static void accumulate(T* target, T v) { atomicAdd(target, v); }
};
template <>
struct ExchangeElement<Vec3f> {
    __device__ static Vec3f shifted(Vec3f v, int dim, int shiftSign, float shift) {
        if (shiftSign != 0) v[dim] += shift;
        return v;
    }
    __device__ static void accumulate(Vec3f* target, const Vec3f& v) {
        atomicAdd(&target->x, v.x);
        atomicAdd(&target->y, v.y);
        atomicAdd(&target->z, v.z);
    }
};

// Peers reached through load/store-accessible pointers only: no put path
// (the host never chooses PathKind::Put for such a transport).
struct LoadStorePeers {
    static constexpr bool kCanPut = false;
    template <class T>
    __device__ static void putWithSignal(T*, const T*, std::size_t, std::uint64_t*, std::uint64_t, int) {
        __trap();
    }
    __device__ static void signal(std::uint64_t*, std::uint64_t, int) { __trap(); }
};

namespace fused {

constexpr int kWarps = kFusedThreads / 32;
// Bulk (TMA) chunk per warp: 128 elements. A chunk starts 16-byte aligned when
// the receive slot does (slots start at multiples of 4 elements) and 4
// elements are a multiple of 16 bytes: sizeof(T) a multiple of 4.
constexpr int kTmaElements = 128;
constexpr int kTmaElementsPerLane = kTmaElements / 32;
template <class T>
inline constexpr bool kBulkCapable = sizeof(T) % 4 == 0 && sizeof(T) <= 16;

// Bytes of a bulk copy of n elements: whole groups of 4 (the slot's padding).
template <class T>
__device__ __forceinline__ unsigned bulkBytes(int n) {
    return static_cast<unsigned>((n + 3) / 4 * 4 * sizeof(T));
}

// This block's share [begin, end) of `count` entries, in multiples of `granule`.
__device__ __forceinline__ void blockRange(int count, int granule, int& begin, int& end) {
    int per = (count + gridDim.x - 1) / gridDim.x;
    per = (per + granule - 1) / granule * granule;
    begin = min(count, static_cast<int>(blockIdx.x) * per);
    end = min(count, begin + per);
}

// Whether pulse q's coordinates arrive with one word per sending block
// (signals per block; the put path keeps its one signal per pulse).
template <class T>
__device__ __forceinline__ bool arrivesByBlockWords(const FusedArgsOf<T>& a, int q) {
    return a.coordBlockWords != nullptr && a.pulses[q].recvPath != PathKind::Put;
}

// Thread t's part, of `count` threads working together (a block or a warp),
// of the wait for pulse q's receive: with signals per block, the words of
// sending blocks t, t + count, ...; else thread 0 waits for the pulse's one
// signal. The caller combines the parts (__syncthreads_and, __all_sync) and
// synchronises the threads before they read what arrived.
template <class T>
__device__ bool waitReceivePart(const FusedArgsOf<T>& a, int q, std::uint64_t seq, const WaitContext& ctx, int what,
                                int t, int count) {
    if (arrivesByBlockWords(a, q)) {
        bool ok = true;
        for (int b = t; ok && b < static_cast<int>(gridDim.x); b += count) {
            ok = waitSignalGe(&a.coordBlockWords[q * kMaxSignalBlocks + b], seq, ctx, what, q, a.pulses[q].recvPe);
        }
        return ok;
    }
    return t != 0 || waitSignalGe(&a.coordSignal[q], seq, ctx, what, q, a.pulses[q].recvPe);
}

// Thread t's part of the wait for every pulse in `mask` (see waitReceivePart).
template <class T>
__device__ bool waitForwardDependencies(const FusedArgsOf<T>& a, std::uint64_t mask, std::uint64_t seq,
                                        const WaitContext& ctx, int t, int count) {
    while (mask) {
        const int q = __ffsll(static_cast<long long>(mask)) - 1;
        mask &= mask - 1;
        if (!waitReceivePart(a, q, seq, ctx, WaitDiagnostics::CoordinateDependency, t, count)) return false;
    }
    return true;
}

__device__ __forceinline__ unsigned sharedAddress(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void bulkStoreToGlobal(void* dst, const void* smem, unsigned bytes) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(sharedAddress(smem)),
                 "r"(bytes)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

__device__ __forceinline__ void waitBulkReadsButOne() { asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory"); }

__device__ __forceinline__ void waitBulkComplete() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

__device__ __forceinline__ void mbarrierInit(std::uint64_t* bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(sharedAddress(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void bulkLoadToShared(void* smem, const void* src, unsigned bytes, std::uint64_t* bar) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sharedAddress(bar)), "r"(bytes)
                 : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     sharedAddress(smem)),
                 "l"(src), "r"(bytes), "r"(sharedAddress(bar))
                 : "memory");
}

__device__ __forceinline__ void mbarrierWaitParity(std::uint64_t* bar, unsigned parity) {
    unsigned done = 0;
    while (!done) {
        asm volatile(
            "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(sharedAddress(bar)), "r"(parity)
            : "memory");
    }
}

// Timestamp `point` of pulse p (transport::PulseTimestamps) where the
// exchange records them; the caller picks the one thread that writes it.
template <class T>
__device__ __forceinline__ void stamp(const FusedArgsOf<T>& a, int p, int point) {
    if (a.trace != nullptr) a.trace[p * kTracePoints + point] = globalTimerNs();
}

// The index of P, a reference into a.pulses.
template <class T>
__device__ __forceinline__ int pulseIndex(const FusedArgsOf<T>& a, const PulseRecordOf<T>& P) {
    return static_cast<int>(&P - a.pulses);
}

// Every block of a fused kernel ends here; the last one of the launch that
// completes the exchange advances the exchange counter, so the next exchange
// (or graph replay) uses a new value. The block counter wraps to 0 at the end
// of every launch, so per-pulse launches reuse it one after the other.
template <class T>
__device__ void finishKernel(const FusedArgsOf<T>& a, std::uint64_t seq) {
    if (threadIdx.x == 0) {
        const unsigned total = gridDim.x * gridDim.y;
        const unsigned old = atomicInc(a.kernelBlockCounter, total - 1);
        if (old == total - 1 && a.trace != nullptr) a.trace[kTraceKernelEnd] = globalTimerNs();
        if (old == total - 1 && a.completesExchange) *reinterpret_cast<volatile std::uint64_t*>(a.sequence) = seq + 1;
    }
}

// Counts this block as done with its pulse; true in the last block of the pulse
// (seen by all its threads). Each block releases its writes before it counts:
// at system scope where they went to peer memory or a NIC may read them
// (`systemRelease`), else at GPU scope. The last block acquires the others'
// at GPU scope only: the counter is local, and the system-scope release it
// issues next (the signal) is cumulative over what it has acquired. (Each
// system-scope fence costs ~0.6 us on H200; this keeps one per block.)
// `phase`: which of the pulse's counters (kPulseCounterPhases of them), so
// that one launch may count its blocks twice.
template <class T>
__device__ bool lastBlockOfPulse(const FusedArgsOf<T>& a, int p, int* flag, bool systemRelease, int phase = 0) {
    __syncthreads();
    if (threadIdx.x == 0) {
        if (systemRelease) {
            __threadfence_system();
        } else {
            __threadfence();
        }
        const unsigned old = atomicInc(&a.pulseBlockCounters[phase * kMaxPulses + p], gridDim.x - 1);
        *flag = old == gridDim.x - 1;
        if (*flag) __threadfence();  // acquire the other blocks' writes
    }
    __syncthreads();
    return *flag != 0;
}

// Forward, direct path: each thread stores its entries into `dst` (the
// receiver's array through a peer pointer, or the put path's staging slot).
// Independent entries (home elements) at once, forwarded ones after the
// pulses that brought them have arrived. Clears *okShared on a failed wait.
template <class T>
__device__ void forwardDirect(const FusedArgsOf<T>& a, const PulseRecordOf<T>& P, float shift, T* dst,
                              std::uint64_t seq, const WaitContext& ctx, int* okShared) {
    const int* map = P.indexMap;
    const T* x = a.x;
    int begin, end;
    blockRange(P.sendCount, 1, begin, end);
    // With the home entries stored by the caller's kernel, none of them here.
    const int independentEnd = a.homeStored ? begin : min(end, P.numIndependent);
    for (int i = begin + threadIdx.x; i < independentEnd; i += blockDim.x) {
        dst[i] = ExchangeElement<T>::shifted(x[map[i]], P.dim, P.shiftSign, shift);
    }
    if (end > P.numIndependent) {
        // This thread's first forwarded entry's index, loaded before the wait
        // (the map is the plan's, not the peer's): after the wait that entry
        // is one dependent load away instead of two.
        const int first = max(begin, P.numIndependent) + threadIdx.x;
        const int firstIndex = first < end ? map[first] : 0;
        const bool arrived = __syncthreads_and(
            waitForwardDependencies(a, P.waitsForward, seq, ctx, static_cast<int>(threadIdx.x), blockDim.x));
        if (threadIdx.x == 0) {
            *okShared = arrived;
            if (begin <= P.numIndependent) stamp(a, pulseIndex(a, P), kTraceDependencies);
        }
        if (arrived) {
            for (int i = first; i < end; i += blockDim.x) {
                dst[i] = ExchangeElement<T>::shifted(x[i == first ? firstIndex : map[i]], P.dim, P.shiftSign, shift);
            }
        }
    }
}

// Forward, bulk path: each warp gathers a chunk into shared memory (double
// buffered) and one lane stores it into the peer's array with a TMA bulk copy.
template <class T>
__device__ void forwardBulk(const FusedArgsOf<T>& a, const PulseRecordOf<T>& P, float shift,
                            T (*tmaBuffer)[2][kTmaElements], std::uint64_t seq, const WaitContext& ctx, int* okShared) {
    const int* map = P.indexMap;
    const T* x = a.x;
    T* dst = P.peerX + P.remoteRecvOffset;
    int begin, end;
    blockRange(P.sendCount, kTmaElements, begin, end);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    bool depsDone = false, ok = true;
    int buffer = 0;
    for (int c = begin + warp * kTmaElements; c < end && ok; c += kWarps * kTmaElements) {
        const int n = min(kTmaElements, end - c);
        // The chunk's indices before any wait (the map is the plan's, not the
        // peer's): after a dependency wait the gather is one load away.
        int index[kTmaElementsPerLane];
        for (int k = 0; k < kTmaElementsPerLane; ++k) {
            const int j = lane + 32 * k;
            index[k] = j < n ? map[c + j] : 0;
        }
        if (c + n > P.numIndependent && !depsDone) {
            // This chunk holds forwarded elements: wait for their pulses (the
            // warp's lanes together; the __syncwarp below orders the loads after).
            ok = __all_sync(0xffffffffu, waitForwardDependencies(a, P.waitsForward, seq, ctx, lane, 32));
            if (lane == 0 && c <= P.numIndependent) stamp(a, pulseIndex(a, P), kTraceDependencies);
            depsDone = true;
            if (!ok) break;
        }
        if (lane == 0) waitBulkReadsButOne();  // the buffer we refill has been read
        __syncwarp();
        T* smem = tmaBuffer[warp][buffer];
        for (int k = 0; k < kTmaElementsPerLane; ++k) {
            const int j = lane + 32 * k;
            smem[j] = j < n ? ExchangeElement<T>::shifted(x[index[k]], P.dim, P.shiftSign, shift) : T{};
        }
        fenceProxyAsyncSharedCta();
        __syncwarp();
        if (lane == 0) bulkStoreToGlobal(dst + c, smem, bulkBytes<T>(n));
        buffer ^= 1;
    }
    if (lane == 0) {
        waitBulkComplete();
        fenceProxyAsyncGlobal();
    }
    if (!ok) atomicExch(okShared, 0);
}

// One received element into the caller's record (FusedArgs::copyRecords):
// x, y, z; the record's other floats kept.
__device__ __forceinline__ void copyReceived(const FusedArgsOf<Vec3f>& a, int element) {
    const transport::HaloRecords& r = a.copyRecords;
    const int record = r.recordOfElement[element];
    if (record < 0) return;
    const Vec3f v = a.x[element];
    float* d = r.records + static_cast<long long>(record) * r.stride;
    d[0] = v.x;
    d[1] = v.y;
    d[2] = v.z;
}

// A halo element's record added into its force, then zeroed for the next
// step (FusedArgs::forceRecords). Atomics: a later pulse's forces may be
// added into the same element meanwhile (it forwarded the element).
__device__ __forceinline__ void addForceRecord(const FusedArgsOf<Vec3f>& a, int element) {
    const transport::HaloRecords& r = a.forceRecords;
    const int record = r.recordOfElement[element];
    if (record < 0) return;
    float* s = r.records + static_cast<long long>(record) * r.stride;
    ExchangeElement<Vec3f>::accumulate(&a.f[element], Vec3f{s[0], s[1], s[2]});
    s[0] = s[1] = s[2] = 0.0f;
}

// Reverse, direct path: add the peer's elements (pulled through its pointer,
// or from the put path's staging slot) into the owners.
template <class T>
__device__ void reverseDirect(const FusedArgsOf<T>& a, const PulseRecordOf<T>& P, const T* src) {
    const int* map = P.indexMap;
    int begin, end;
    blockRange(P.sendCount, 1, begin, end);
    for (int i = begin + threadIdx.x; i < end; i += blockDim.x) ExchangeElement<T>::accumulate(&a.f[map[i]], src[i]);
}

// Reverse, bulk path: each warp pulls a chunk of the peer's elements into
// shared memory with a TMA bulk load, then adds it into the owners.
template <class T>
__device__ void reverseBulk(const FusedArgsOf<T>& a, const PulseRecordOf<T>& P, T (*tmaBuffer)[kTmaElements],
                            std::uint64_t* tmaBarrier) {
    const int* map = P.indexMap;
    const T* src = P.peerF + P.remoteRecvOffset;
    int begin, end;
    blockRange(P.sendCount, kTmaElements, begin, end);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
        mbarrierInit(&tmaBarrier[warp], 1);
        fenceProxyAsyncSharedCta();
        fenceProxyAsyncGlobal();  // the acquired peer elements are visible to the bulk loads
    }
    __syncwarp();
    unsigned parity = 0;
    for (int c = begin + warp * kTmaElements; c < end; c += kWarps * kTmaElements) {
        const int n = min(kTmaElements, end - c);
        if (lane == 0) bulkLoadToShared(tmaBuffer[warp], src + c, bulkBytes<T>(n), &tmaBarrier[warp]);
        mbarrierWaitParity(&tmaBarrier[warp], parity);
        parity ^= 1;
        for (int j = lane; j < n; j += 32) ExchangeElement<T>::accumulate(&a.f[map[c + j]], tmaBuffer[warp][j]);
        __syncwarp();  // the buffer is free for the next load
    }
}

}  // namespace fused

// ---------------------------------------------------------------------------
// Forward (coordinates): pack (with the periodic shift) straight into the
// receiver's array (direct, bulk) or into a staging slot then put-with-signal
// (put, where Peers can).
template <class T, class Peers>
__global__ void __launch_bounds__(kFusedThreads) fusedForward(FusedArgsOf<T> a) {
    using namespace fused;
    __shared__ int flag;
    __shared__ int okShared;
    __shared__ alignas(128) T tmaBuffer[kWarps][2][kTmaElements];

    // May be a programmatic dependent of the previous kernel on the stream
    // (which may advance a.sequence): wait for it before reading anything.
    // Its own dependents (the non-local gather) are let in only once the
    // receive has arrived, below: earlier, their blocks would wait resident
    // through the whole exchange and slow the local force kernel beside it.
    cuda::waitForPrerequisiteGrids();
    const int p = a.firstPulse + static_cast<int>(blockIdx.y);
    const std::uint64_t seq = *reinterpret_cast<volatile std::uint64_t*>(a.sequence);
    const WaitContext ctx{a.diagnostics, a.abortFlag, a.timeoutNs, a.myPe, WaitDiagnostics::CoordinateKernel};
    const PulseRecordOf<T>& P = a.pulses[p];
    if (blockIdx.x == 0 && threadIdx.x == 0) stamp(a, p, kTraceStart);
    if (threadIdx.x == 0) okShared = !aborted(ctx);
    __syncthreads();
    if (!okShared) {
        finishKernel(a, seq);
        return;
    }

    const float shift = a.shift[p];
    const bool put = Peers::kCanPut && P.sendPath == PathKind::Put;
    if (kBulkCapable<T> && P.sendPath == PathKind::Tma && !a.homeStored) {
        forwardBulk(a, P, shift, tmaBuffer, seq, ctx, &okShared);
    } else {
        T* dst = put ? a.staging + static_cast<long long>(p) * a.stagingStride : P.peerX + P.remoteRecvOffset;
        forwardDirect(a, P, shift, dst, seq, ctx, &okShared);
    }

    // Notify the receiver: with signals per block, each block once its own
    // stores are out (its word on the receiver, a release at system scope
    // that the barrier makes cover the whole block's stores and bulk copies);
    // else the pulse's last block once every block has packed. Not at all
    // where the caller's kernel signalled it (it sent home atoms alone).
    if ((a.callerSignalled >> p) & 1u) {
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            stamp(a, p, kTraceSent);
            stamp(a, p, kTraceSignalled);
        }
    } else if (a.coordBlockWords != nullptr && !put) {
        __syncthreads();
        if (threadIdx.x == 0) {
            if (blockIdx.x == 0) stamp(a, p, kTraceSent);
            // The home entries came from the kernel before this one: a
            // system-scope fence makes sure the release covers them too.
            if (a.homeStored) __threadfence_system();
            if (okShared && p != a.withholdPulse) releaseStoreSys(&P.peerCoordBlockWords[blockIdx.x], seq);
            if (blockIdx.x == 0) stamp(a, p, kTraceSignalled);
        }
    } else {
        const bool last = lastBlockOfPulse(a, p, &flag, /*systemRelease=*/true);
        if (last && threadIdx.x == 0) stamp(a, p, kTraceSent);
        if (last && okShared && p != a.withholdPulse) {
            if (put) {
                const std::size_t bytes = static_cast<std::size_t>(P.sendCount) * sizeof(T);
                if (bytes > 0) {
                    Peers::putWithSignal(a.x + P.remoteRecvOffset,
                                         a.staging + static_cast<long long>(p) * a.stagingStride, bytes,
                                         &a.coordSignal[p], seq, P.sendPe);
                } else if (threadIdx.x == 0) {
                    Peers::signal(&a.coordSignal[p], seq, P.sendPe);
                }
            } else if (threadIdx.x == 0) {
                releaseStoreSys(P.peerCoordSignal, seq);
            }
            if (threadIdx.x == 0) stamp(a, p, kTraceSignalled);
        }
    }

    // Return only once this rank's own receive of pulse p has arrived (all
    // threads take part: with signals per block each waits for one sending
    // block's word); then clear its halo slot of the reverse data (the peer
    // pulled last step's before it sent these).
    const bool received =
        __syncthreads_and(okShared != 0 && waitReceivePart(a, p, seq, ctx, WaitDiagnostics::CoordinateReceive,
                                                           static_cast<int>(threadIdx.x), blockDim.x));
    if (blockIdx.x == 0 && threadIdx.x == 0) stamp(a, p, kTraceReceived);
    cuda::allowDependentGrids();
    // The receive slot's part of this block: its reverse data cleared and,
    // where the caller asked (copyReceivedCoordinates), its coordinates
    // copied into the caller's records -- what a gather kernel after this
    // one would do, without its launch and its wait for free SMs.
    if (received) {
        int begin, end;
        blockRange(P.recvCapacity, 1, begin, end);
        for (int i = begin + threadIdx.x; i < end; i += blockDim.x) {
            a.f[P.recvOffset + i] = T{};
            if constexpr (std::is_same_v<T, Vec3f>) {
                if (a.copyRecords.records != nullptr && i < P.recvCount) copyReceived(a, P.recvOffset + i);
            }
        }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) stamp(a, p, kTraceFinished);
    finishKernel(a, seq);
}

// ---------------------------------------------------------------------------
// Reverse (forces): pulses in reverse order. The rank that holds halo data of
// pulse p announces it (direct, bulk: the owner pulls through the peer
// pointer; put: it puts the data with a signal); the owner adds it into its
// elements.
template <class T, class Peers>
__global__ void __launch_bounds__(kFusedThreads) fusedReverse(FusedArgsOf<T> a) {
    using namespace fused;
    __shared__ int flag;
    // Thread 0's verdicts, one word per phase: a word written again while
    // other threads may still read it is a race (compute-sanitizer racecheck).
    __shared__ int okShared;        // not aborted at the start
    __shared__ int holderOk;        // block 0: the later pulses accumulated, and not aborted
    __shared__ int receivedShared;  // the peer's data arrived
    __shared__ alignas(128) T tmaBuffer[kWarps][kTmaElements];
    __shared__ alignas(8) std::uint64_t tmaBarrier[kWarps];

    cuda::waitForPrerequisiteGrids();                                           // e.g. the scatter of the halo forces
    const int p = a.firstPulse + static_cast<int>(gridDim.y - 1 - blockIdx.y);  // last pulse first
    const std::uint64_t seq = *reinterpret_cast<volatile std::uint64_t*>(a.sequence);
    const WaitContext ctx{a.diagnostics, a.abortFlag, a.timeoutNs, a.myPe, WaitDiagnostics::ForceKernel};
    const PulseRecordOf<T>& P = a.pulses[p];
    if (blockIdx.x == 0 && threadIdx.x == 0) stamp(a, p, kTraceStart);
    if (threadIdx.x == 0) okShared = !aborted(ctx);
    __syncthreads();
    if (!okShared) {
        finishKernel(a, seq);
        return;
    }
    const bool putBack = Peers::kCanPut && P.recvPath == PathKind::Put;
    const bool putHere = Peers::kCanPut && P.sendPath == PathKind::Put;

    // Where the caller's records hold the halo's forces
    // (addHaloForcesFromRecords), every block adds its share of slot p's
    // into the forces first; the last of them to finish is then the
    // holder below, else block 0 is.
    bool holder = blockIdx.x == 0;
    if constexpr (std::is_same_v<T, Vec3f>) {
        if (a.forceRecords.records != nullptr) {
            int begin, end;
            blockRange(P.recvCount, 1, begin, end);
            for (int i = begin + threadIdx.x; i < end; i += blockDim.x) addForceRecord(a, P.recvOffset + i);
            holder = lastBlockOfPulse(a, p, &flag, /*systemRelease=*/false, /*phase=*/1);
        }
    }

    // Halo-data holder: once the later pulses that forwarded our received
    // elements have accumulated here, our data on slot p is complete.
    if (holder) {
        if (threadIdx.x == 0) {
            bool ok = true;
            std::uint64_t mask = P.waitsReverse;
            while (mask && ok) {
                const int q = __ffsll(static_cast<long long>(mask)) - 1;
                mask &= mask - 1;
                ok = waitSignalGe(&a.doneWords[q], seq, ctx, WaitDiagnostics::ForceDependency, q, a.myPe,
                                  /*systemScope=*/false);
            }
            if (P.waitsReverse != 0) stamp(a, p, kTraceDependencies);
            // A NIC (put over InfiniBand) reads the data without a GPU
            // acquire: make it visible at system scope first. The direct
            // paths' release store below is cumulative over what this thread
            // acquired, so they need no fence of their own.
            if (ok && putBack) __threadfence_system();
            holderOk = ok;
        }
        __syncthreads();
        if (holderOk && p != a.withholdPulse) {
            if (putBack) {
                const std::size_t bytes = static_cast<std::size_t>(P.recvCount) * sizeof(T);
                if (bytes > 0) {
                    Peers::putWithSignal(a.forceStaging + static_cast<long long>(p) * a.stagingStride,
                                         a.f + P.recvOffset, bytes, &a.forceSignal[p], seq, P.recvPe);
                } else if (threadIdx.x == 0) {
                    Peers::signal(&a.forceSignal[p], seq, P.recvPe);
                }
            } else if (threadIdx.x == 0) {
                releaseStoreSys(P.peerForceSignal, seq);
            }
            if (threadIdx.x == 0) stamp(a, p, kTraceSignalled);
        }
    }

    // Data owner: add the peer's data on the elements this rank sent.
    if (threadIdx.x == 0) {
        const bool holderDone = !holder || holderOk;
        receivedShared =
            holderDone && waitSignalGe(&a.forceSignal[p], seq, ctx, WaitDiagnostics::ForceReady, p, P.sendPe);
        if (holderDone && holder) stamp(a, p, kTraceReceived);
    }
    __syncthreads();
    const bool received = receivedShared != 0;
    cuda::allowDependentGrids();  // after the wait, as in fusedForward
    if (received && kBulkCapable<T> && P.sendPath == PathKind::Tma) {
        reverseBulk(a, P, tmaBuffer, tmaBarrier);
    } else if (received) {
        reverseDirect(a, P,
                      putHere ? a.forceStaging + static_cast<long long>(p) * a.stagingStride
                              : P.peerF + P.remoteRecvOffset);
    }

    // Publish "pulse p accumulated" for the earlier pulses that wait on it
    // (local atomics only, read on this GPU or pulled by a peer after a
    // system-scope release by the block that waits for this word). Only a
    // pulse with such waiters (P.publishesDone, from the plan: the pulses
    // that forwarded earlier pulses' elements) publishes: the others skip
    // the block count, a fence and an atomic round trip at the end of the
    // step's non-local chain. With timestamps every pulse counts, for its
    // `finished` point.
    if (P.publishesDone || a.trace != nullptr) {
        const bool last = lastBlockOfPulse(a, p, &flag, /*systemRelease=*/false);
        if (last && threadIdx.x == 0) stamp(a, p, kTraceFinished);
        if (last && received && threadIdx.x == 0) releaseStoreGpu(&a.doneWords[p], seq);
    }
    finishKernel(a, seq);
}

// Blocks of fusedForward<T, Peers> and fusedReverse<T, Peers> that fit on
// the current device at once (both kernels' occupancy, the smaller).
template <class T, class Peers>
int maxResidentFusedBlocksOf() {
    int device = 0, sms = 0, perSmX = 0, perSmF = 0;
    HALOEX_CUDA_CHECK(cudaGetDevice(&device));
    HALOEX_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    HALOEX_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSmX, fusedForward<T, Peers>, kFusedThreads, 0));
    HALOEX_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSmF, fusedReverse<T, Peers>, kFusedThreads, 0));
    return sms * std::min(perSmX, perSmF);
}

}  // namespace haloex::nvshmem_detail
