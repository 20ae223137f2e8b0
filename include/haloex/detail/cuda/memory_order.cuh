#pragma once
// Device-side memory-ordering primitives for GPU-initiated signalling between
// ranks: the global timer, relaxed and acquire loads, release stores. Plain
// PTX, no NVSHMEM, no relocatable device code: the nvshmem transport's fused
// kernels (src/transport/fused/device_sync.cuh) and the device halo view
// (haloex/halo/device_halo_view.cuh) use the same ones.
#include <cstdint>

namespace haloex::cuda {

// Nanoseconds of the GPU's global timer (for time limits, not for profiling).
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
// (for example data stored into peer memory by the threads of this block
// before a __syncthreads()).
__device__ __forceinline__ void releaseStoreSys(std::uint64_t* addr, std::uint64_t value) {
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(addr), "l"(value) : "memory");
}

__device__ __forceinline__ void releaseStoreGpu(std::uint64_t* addr, std::uint64_t value) {
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(addr), "l"(value) : "memory");
}

}  // namespace haloex::cuda
