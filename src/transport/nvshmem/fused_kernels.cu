// The fused, GPU-initiated halo exchange kernels (docs/nvshmem.md): one launch
// moves every pulse's coordinates (FusedPackCommX) or forces
// (FusedCommUnpackF), with per-pulse signals instead of host synchronisation.
#include <nvshmem.h>
#include <nvshmemx.h>

#include "device_sync.cuh"
#include "fused_args.hpp"
#include "fused_kernels.hpp"
#include "haloex/cuda/check.hpp"
#include "haloex/cuda/dependent_launch.cuh"

namespace haloex::nvshmem_detail {
namespace {

constexpr int kWarps = kFusedThreads / 32;
// TMA chunk per warp: 128 atoms = 1536 bytes, a multiple of 16 bytes that
// starts 16-byte aligned (receive slots start at multiples of 4 atoms).
constexpr int kTmaAtoms = 128;
constexpr int kTmaAtomsPerLane = kTmaAtoms / 32;

__device__ __forceinline__ Vec3f shifted(Vec3f v, int dim, int shiftSign, float shift) {
    // Add only where the plan shifts, so -0.0f keeps its bits as in the reference.
    if (shiftSign != 0) v[dim] += shift;
    return v;
}

// This block's share [begin, end) of `count` entries, in multiples of `granule`.
__device__ __forceinline__ void blockRange(int count, int granule, int& begin, int& end) {
    int per = (count + gridDim.x - 1) / gridDim.x;
    per = (per + granule - 1) / granule * granule;
    begin = min(count, static_cast<int>(blockIdx.x) * per);
    end = min(count, begin + per);
}

// Waits for every pulse in `mask` (receive signals of this rank).
__device__ bool waitForwardDependencies(const FusedArgs& a, std::uint64_t mask, std::uint64_t seq,
                                        const WaitContext& ctx) {
    while (mask) {
        const int q = __ffsll(static_cast<long long>(mask)) - 1;
        mask &= mask - 1;
        if (!waitSignalGe(&a.coordSignal[q], seq, ctx, WaitDiagnostics::CoordinateDependency, q, a.pulses[q].recvPe)) {
            return false;
        }
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

// Every block of a fused kernel ends here; the last one of the launch that
// completes the exchange advances the exchange counter, so the next exchange
// (or graph replay) uses a new value. The block counter wraps to 0 at the end
// of every launch, so per-pulse launches reuse it one after the other.
__device__ void finishKernel(const FusedArgs& a, std::uint64_t seq) {
    if (threadIdx.x == 0) {
        const unsigned total = gridDim.x * gridDim.y;
        const unsigned old = atomicInc(a.kernelBlockCounter, total - 1);
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
__device__ bool lastBlockOfPulse(const FusedArgs& a, int p, int* flag, bool systemRelease) {
    __syncthreads();
    if (threadIdx.x == 0) {
        if (systemRelease) {
            __threadfence_system();
        } else {
            __threadfence();
        }
        const unsigned old = atomicInc(&a.pulseBlockCounters[p], gridDim.x - 1);
        *flag = old == gridDim.x - 1;
        if (*flag) __threadfence();  // acquire the other blocks' writes
    }
    __syncthreads();
    return *flag != 0;
}

}  // namespace

// ---------------------------------------------------------------------------
// Coordinates: pack (with the periodic shift) straight into the receiver's
// array (direct, tma) or into a staging slot then put-with-signal (put).
__global__ void __launch_bounds__(kFusedThreads) fusedPackCommX(FusedArgs a) {
    __shared__ int flag;
    __shared__ int okShared;
    __shared__ alignas(128) Vec3f tmaBuffer[kWarps][2][kTmaAtoms];

    // May be a programmatic dependent of the previous kernel on the stream
    // (which may advance a.sequence): wait for it before reading anything.
    // Its own dependents (the non-local gather) are let in only once the
    // receive has arrived, below: earlier, their blocks would wait resident
    // through the whole exchange and slow the local force kernel beside it.
    cuda::waitForPrerequisiteGrids();
    const int p = a.firstPulse + static_cast<int>(blockIdx.y);
    const std::uint64_t seq = *reinterpret_cast<volatile std::uint64_t*>(a.sequence);
    const WaitContext ctx{a.diagnostics, a.abortFlag, a.timeoutNs, a.myPe, WaitDiagnostics::CoordinateKernel};
    const PulseRecord& P = a.pulses[p];
    if (threadIdx.x == 0) okShared = !aborted(ctx);
    __syncthreads();
    if (!okShared) {
        finishKernel(a, seq);
        return;
    }

    const float shift = a.shift[p];
    const int* map = P.indexMap;
    const Vec3f* x = a.x;
    if (P.sendPath == PathKind::Tma) {
        Vec3f* dst = P.peerX + P.remoteRecvOffset;
        int begin, end;
        blockRange(P.sendCount, kTmaAtoms, begin, end);
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        bool depsDone = false, ok = true;
        int buffer = 0;
        for (int c = begin + warp * kTmaAtoms; c < end && ok; c += kWarps * kTmaAtoms) {
            const int n = min(kTmaAtoms, end - c);
            if (c + n > P.numIndependent && !depsDone) {
                // This chunk holds forwarded atoms: wait for their pulses (warp-level).
                int waited = 1;
                if (lane == 0) waited = waitForwardDependencies(a, P.waitsForward, seq, ctx);
                ok = __shfl_sync(0xffffffffu, waited, 0) != 0;
                depsDone = true;
                if (!ok) break;
            }
            if (lane == 0) waitBulkReadsButOne();  // the buffer we refill has been read
            __syncwarp();
            Vec3f* smem = tmaBuffer[warp][buffer];
            for (int k = 0; k < kTmaAtomsPerLane; ++k) {
                const int j = lane + 32 * k;
                const int i = c + j;
                smem[j] = i < c + n ? shifted(x[map[i]], P.dim, P.shiftSign, shift) : Vec3f{};
            }
            fenceProxyAsyncSharedCta();
            __syncwarp();
            if (lane == 0) {
                const unsigned bytes = static_cast<unsigned>((n + 3) / 4 * 4 * sizeof(Vec3f));
                bulkStoreToGlobal(dst + c, smem, bytes);
            }
            buffer ^= 1;
        }
        if (lane == 0) {
            waitBulkComplete();
            fenceProxyAsyncGlobal();
        }
        if (!ok) atomicExch(&okShared, 0);
    } else {
        Vec3f* dst = P.sendPath == PathKind::Direct ? P.peerX + P.remoteRecvOffset
                                                    : a.staging + static_cast<long long>(p) * a.stagingStride;
        int begin, end;
        blockRange(P.sendCount, 1, begin, end);
        // Independent entries (home atoms) at once ...
        const int independentEnd = min(end, P.numIndependent);
        for (int i = begin + threadIdx.x; i < independentEnd; i += blockDim.x) {
            dst[i] = shifted(x[map[i]], P.dim, P.shiftSign, shift);
        }
        // ... forwarded ones after the pulses that brought them have arrived.
        if (end > P.numIndependent) {
            if (threadIdx.x == 0) okShared = waitForwardDependencies(a, P.waitsForward, seq, ctx);
            __syncthreads();
            if (okShared) {
                for (int i = max(begin, P.numIndependent) + threadIdx.x; i < end; i += blockDim.x) {
                    dst[i] = shifted(x[map[i]], P.dim, P.shiftSign, shift);
                }
            }
        }
    }

    // Notify the receiver once every block of the pulse has packed.
    const bool last = lastBlockOfPulse(a, p, &flag, /*systemRelease=*/true);
    if (last && okShared && p != a.withholdPulse) {
        if (P.sendPath == PathKind::Put) {
            const std::size_t bytes = static_cast<std::size_t>(P.sendCount) * sizeof(Vec3f);
            if (bytes > 0) {
                nvshmemx_putmem_signal_nbi_block(a.x + P.remoteRecvOffset,
                                                 a.staging + static_cast<long long>(p) * a.stagingStride, bytes,
                                                 &a.coordSignal[p], seq, NVSHMEM_SIGNAL_SET, P.sendPe);
            } else if (threadIdx.x == 0) {
                nvshmemx_signal_op(&a.coordSignal[p], seq, NVSHMEM_SIGNAL_SET, P.sendPe);
            }
        } else if (threadIdx.x == 0) {
            releaseStoreSys(P.peerCoordSignal, seq);
        }
    }

    // Return only once this rank's own receive of pulse p has arrived; then
    // clear its halo force slot (the peer pulled last step's forces before it
    // sent these coordinates).
    if (threadIdx.x == 0) {
        okShared =
            okShared && waitSignalGe(&a.coordSignal[p], seq, ctx, WaitDiagnostics::CoordinateReceive, p, P.recvPe);
    }
    __syncthreads();
    cuda::allowDependentGrids();
    if (okShared) {
        int begin, end;
        blockRange(P.recvCapacity, 1, begin, end);
        for (int i = begin + threadIdx.x; i < end; i += blockDim.x) a.f[P.recvOffset + i] = Vec3f{};
    }
    finishKernel(a, seq);
}

// ---------------------------------------------------------------------------
// Forces: pulses in reverse order. The rank that holds halo forces of pulse p
// announces them (direct, tma: the owner pulls through the peer pointer; put:
// it puts them with a signal); the owner adds them into its atoms.
__global__ void __launch_bounds__(kFusedThreads) fusedCommUnpackF(FusedArgs a) {
    __shared__ int flag;
    __shared__ int okShared;
    __shared__ alignas(128) Vec3f tmaBuffer[kWarps][kTmaAtoms];
    __shared__ alignas(8) std::uint64_t tmaBarrier[kWarps];

    cuda::waitForPrerequisiteGrids();                                           // e.g. the scatter of the halo forces
    const int p = a.firstPulse + static_cast<int>(gridDim.y - 1 - blockIdx.y);  // last pulse first
    const std::uint64_t seq = *reinterpret_cast<volatile std::uint64_t*>(a.sequence);
    const WaitContext ctx{a.diagnostics, a.abortFlag, a.timeoutNs, a.myPe, WaitDiagnostics::ForceKernel};
    const PulseRecord& P = a.pulses[p];
    if (threadIdx.x == 0) okShared = !aborted(ctx);
    __syncthreads();
    if (!okShared) {
        finishKernel(a, seq);
        return;
    }

    // Halo-force holder: once the later pulses that forwarded our received
    // atoms have accumulated here, our forces on slot p are complete.
    if (blockIdx.x == 0) {
        if (threadIdx.x == 0) {
            std::uint64_t mask = P.waitsReverse;
            while (mask && okShared) {
                const int q = __ffsll(static_cast<long long>(mask)) - 1;
                mask &= mask - 1;
                okShared = waitSignalGe(&a.doneWords[q], seq, ctx, WaitDiagnostics::ForceDependency, q, a.myPe,
                                        /*systemScope=*/false);
            }
            // A NIC (put over InfiniBand) reads the forces without a GPU
            // acquire: make them visible at system scope first. The direct
            // paths' release store below is cumulative over what this thread
            // acquired, so they need no fence of their own.
            if (okShared && P.recvPath == PathKind::Put) __threadfence_system();
        }
        __syncthreads();
        if (okShared && p != a.withholdPulse) {
            if (P.recvPath == PathKind::Put) {
                const std::size_t bytes = static_cast<std::size_t>(P.recvCount) * sizeof(Vec3f);
                if (bytes > 0) {
                    nvshmemx_putmem_signal_nbi_block(a.forceStaging + static_cast<long long>(p) * a.stagingStride,
                                                     a.f + P.recvOffset, bytes, &a.forceSignal[p], seq,
                                                     NVSHMEM_SIGNAL_SET, P.recvPe);
                } else if (threadIdx.x == 0) {
                    nvshmemx_signal_op(&a.forceSignal[p], seq, NVSHMEM_SIGNAL_SET, P.recvPe);
                }
            } else if (threadIdx.x == 0) {
                releaseStoreSys(P.peerForceSignal, seq);
            }
        }
    }

    // Data owner: add the peer's forces on the atoms this rank sent.
    if (threadIdx.x == 0 && okShared) {
        okShared = waitSignalGe(&a.forceSignal[p], seq, ctx, WaitDiagnostics::ForceReady, p, P.sendPe);
    }
    __syncthreads();
    cuda::allowDependentGrids();  // after the wait, as in fusedPackCommX
    const int* map = P.indexMap;
    if (okShared && P.sendPath == PathKind::Tma) {
        const Vec3f* src = P.peerF + P.remoteRecvOffset;
        int begin, end;
        blockRange(P.sendCount, kTmaAtoms, begin, end);
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        if (lane == 0) {
            mbarrierInit(&tmaBarrier[warp], 1);
            fenceProxyAsyncSharedCta();
            fenceProxyAsyncGlobal();  // the acquired peer forces are visible to the bulk loads
        }
        __syncwarp();
        unsigned parity = 0;
        for (int c = begin + warp * kTmaAtoms; c < end; c += kWarps * kTmaAtoms) {
            const int n = min(kTmaAtoms, end - c);
            if (lane == 0) {
                const unsigned bytes = static_cast<unsigned>((n + 3) / 4 * 4 * sizeof(Vec3f));
                bulkLoadToShared(tmaBuffer[warp], src + c, bytes, &tmaBarrier[warp]);
            }
            mbarrierWaitParity(&tmaBarrier[warp], parity);
            parity ^= 1;
            for (int j = lane; j < n; j += 32) {
                const Vec3f v = tmaBuffer[warp][j];
                Vec3f* target = &a.f[map[c + j]];
                atomicAdd(&target->x, v.x);
                atomicAdd(&target->y, v.y);
                atomicAdd(&target->z, v.z);
            }
            __syncwarp();  // the buffer is free for the next load
        }
    } else if (okShared) {
        const Vec3f* src = P.sendPath == PathKind::Put ? a.forceStaging + static_cast<long long>(p) * a.stagingStride
                                                       : P.peerF + P.remoteRecvOffset;
        int begin, end;
        blockRange(P.sendCount, 1, begin, end);
        for (int i = begin + threadIdx.x; i < end; i += blockDim.x) {
            const Vec3f v = src[i];
            Vec3f* target = &a.f[map[i]];
            atomicAdd(&target->x, v.x);
            atomicAdd(&target->y, v.y);
            atomicAdd(&target->z, v.z);
        }
    }

    // Publish "pulse p accumulated" for the earlier pulses that wait on it
    // (local atomics only, read on this GPU or pulled by a peer after a
    // system-scope release by the block that waits for this word).
    const bool last = lastBlockOfPulse(a, p, &flag, /*systemRelease=*/false);
    if (last && okShared && threadIdx.x == 0) releaseStoreGpu(&a.doneWords[p], seq);
    finishKernel(a, seq);
}

void launchFusedPackCommX(const FusedArgs& args, int blocksPerPulse, cudaStream_t stream) {
    const dim3 grid(blocksPerPulse, args.numPulses);
    cuda::launchDependent(fusedPackCommX, grid, kFusedThreads, 0, stream, args);
}

void launchFusedCommUnpackF(const FusedArgs& args, int blocksPerPulse, cudaStream_t stream) {
    const dim3 grid(blocksPerPulse, args.numPulses);
    cuda::launchDependent(fusedCommUnpackF, grid, kFusedThreads, 0, stream, args);
}

// The ablation: the same kernels, one launch per pulse in stream order. Each
// launch waits for its own receive before it ends, so a pulse's forwarded
// atoms are home before the next launch packs them (its dependency waits are
// then already satisfied); only the last launch advances the counter.
void launchPackCommXPerPulse(FusedArgs args, int blocksPerPulse, cudaStream_t stream) {
    const dim3 grid(blocksPerPulse, 1);
    for (int p = 0; p < args.numPulses; ++p) {
        args.firstPulse = p;
        args.completesExchange = p == args.numPulses - 1;
        cuda::launchDependent(fusedPackCommX, grid, kFusedThreads, 0, stream, args);
    }
}

void launchCommUnpackFPerPulse(FusedArgs args, int blocksPerPulse, cudaStream_t stream) {
    const dim3 grid(blocksPerPulse, 1);
    for (int p = args.numPulses - 1; p >= 0; --p) {
        args.firstPulse = p;
        args.completesExchange = p == 0;
        cuda::launchDependent(fusedCommUnpackF, grid, kFusedThreads, 0, stream, args);
    }
}

int maxResidentFusedBlocks() {
    int device = 0, sms = 0, perSmX = 0, perSmF = 0;
    HALOEX_CUDA_CHECK(cudaGetDevice(&device));
    HALOEX_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    HALOEX_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSmX, fusedPackCommX, kFusedThreads, 0));
    HALOEX_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSmF, fusedCommUnpackF, kFusedThreads, 0));
    return sms * std::min(perSmX, perSmF);
}

int multiprocessorCount() {
    int device = 0, sms = 0;
    HALOEX_CUDA_CHECK(cudaGetDevice(&device));
    HALOEX_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return sms;
}

}  // namespace haloex::nvshmem_detail
