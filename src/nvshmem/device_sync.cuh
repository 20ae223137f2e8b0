#pragma once
// Device-side ordering and waiting primitives of the fused exchange, named for
// what they guarantee. Every wait has a time limit: on expiry it records who
// waited for what in mapped host memory (read by the host watchdog), raises
// the transport's abort flag so every other wait gives up too, and returns
// false; kernels then exit without signalling, and the job is aborted.
#include <cstdint>

#include "wait_diagnostics.hpp"

namespace haloex::nvshmem_detail {

__device__ __forceinline__ std::uint64_t globalTimerNs() {
    std::uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Spinning reads: relaxed loads, then one acquire load of the same word once
// the value has come. The acquire load reads that value or a later one of
// the same monotonic counter, so it synchronises with the release that wrote
// it. (A fence.acq_rel.sys instead cost ~0.6 us per wait on 2 x H200.)
__device__ __forceinline__ std::uint64_t loadRelaxed(const std::uint64_t* addr, bool systemScope) {
    std::uint64_t v;
    if (systemScope) {
        asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(addr) : "memory");
    } else {
        asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(addr) : "memory");
    }
    return v;
}

__device__ __forceinline__ std::uint64_t loadAcquire(const std::uint64_t* addr, bool systemScope) {
    std::uint64_t v;
    if (systemScope) {
        asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(addr) : "memory");
    } else {
        asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(addr) : "memory");
    }
    return v;
}

// Stores with release semantics at system scope: the receiver that acquires
// this value also sees every write this thread's fences ordered before it
// (here: the packed data of all blocks of a pulse, stored into peer memory).
__device__ __forceinline__ void releaseStoreSys(std::uint64_t* addr, std::uint64_t value) {
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(addr), "l"(value) : "memory");
}

__device__ __forceinline__ void releaseStoreGpu(std::uint64_t* addr, std::uint64_t value) {
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(addr), "l"(value) : "memory");
}

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
    int kernel;                    // WaitDiagnostics::Kernel
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
