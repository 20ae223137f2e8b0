#pragma once
// Device-side ordering and waiting primitives of the fused exchange, named for
// what they guarantee. Every wait has a time limit: on expiry it records who
// waited for what in mapped host memory (read by the host watchdog), raises
// the transport's abort flag so every other wait gives up too, and returns
// false; kernels then exit without signalling, and the job is aborted.
#include <cstdint>

#include "haloex/detail/cuda/memory_order.cuh"
#include "wait_diagnostics.hpp"

namespace haloex::nvshmem_detail {

// The ordering primitives are shared with the device halo view.
using haloex::cuda::globalTimerNs;
using haloex::cuda::loadAcquire;
using haloex::cuda::loadRelaxed;
using haloex::cuda::releaseStoreGpu;
using haloex::cuda::releaseStoreSys;

// Orders the async proxy (TMA bulk copies) with ordinary loads and stores.
__device__ __forceinline__ void fenceProxyAsyncGlobal() { asm volatile("fence.proxy.async.global;" ::: "memory"); }
__device__ __forceinline__ void fenceProxyAsyncSharedCta() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

struct WaitContext {
    WaitDiagnostics* diagnostics;  // mapped host memory
    int* abortFlag;                // device memory, sticky
    std::uint64_t timeoutNs;
    int myRank;
    int kernel;  // WaitDiagnostics::Kernel
};

__device__ __forceinline__ bool aborted(const WaitContext& ctx) {
    return *reinterpret_cast<volatile int*>(ctx.abortFlag) != 0;
}

// Records the first timeout of the job on this rank, then raises the abort flag.
__device__ inline void reportTimeout(const WaitContext& ctx, int what, int pulse, int peer, std::uint64_t expected,
                                     std::uint64_t seen, std::uint64_t waitedNs) {
    if (atomicCAS(&ctx.diagnostics->claimed, 0, 1) == 0) {
        WaitDiagnostics* d = ctx.diagnostics;
        d->rank = ctx.myRank;
        d->kernel = ctx.kernel;
        d->what = what;
        d->pulse = pulse;
        d->peer = peer;
        d->expected = expected;
        d->seen = seen;
        d->waitedNs = waitedNs;
        __threadfence_system();
        *reinterpret_cast<volatile int*>(&d->ready) = 1;
    }
    atomicExch(ctx.abortFlag, 1);
}

// Spins until *signal >= expected (acquire, system scope). False on timeout
// or when another wait of this transport has already timed out.
__device__ inline bool waitSignalGe(const std::uint64_t* signal, std::uint64_t expected, const WaitContext& ctx,
                                    int what, int pulse, int peer, bool systemScope = true) {
    std::uint64_t seen = loadAcquire(signal, systemScope);
    if (seen >= expected) return true;
    const std::uint64_t start = globalTimerNs();
    unsigned polls = 0;
    for (;;) {
        seen = loadRelaxed(signal, systemScope);
        if (seen >= expected) {
            loadAcquire(signal, systemScope);
            return true;
        }
        if ((++polls & 255u) == 0) {
            if (aborted(ctx)) return false;
            const std::uint64_t waited = globalTimerNs() - start;
            if (waited > ctx.timeoutNs) {
                reportTimeout(ctx, what, pulse, peer, expected, seen, waited);
                return false;
            }
        }
    }
}

}  // namespace haloex::nvshmem_detail
