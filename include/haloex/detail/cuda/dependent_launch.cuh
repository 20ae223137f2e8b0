#pragma once
// Programmatic dependent launch (Hopper and later): a kernel launched with
// launchDependent() may be scheduled while the kernel before it on the same
// stream is still running, so the launch latency between the two kernels of
// a chain (gather -> forces -> scatter -> halo exchange) overlaps the first
// one's tail. Such a kernel must call waitForPrerequisiteGrids() before it
// touches anything the previous kernel writes; that wait returns once the
// previous grid has completed and its memory operations are visible. A kernel
// calls allowDependentGrids() to let the next one be scheduled early (every
// block of it must have called it, or exited). Where a kernel waits or works
// long after its last block has started, it calls it late: the dependent's
// blocks, once resident, wait there idle and take SM room from the kernels
// of other streams.
//
// Off with HALOEX_PDL=0, and before compute capability 9.0 (plain launches;
// the device-side calls are then no-ops).
#include <cuda_runtime.h>

#include <cstdlib>
#include <utility>

#include "haloex/cuda/check.hpp"
#include "haloex/detail/core/environment_switch.hpp"
#include "haloex/detail/cuda/stream_order.hpp"

namespace haloex::cuda {

__device__ __forceinline__ void waitForPrerequisiteGrids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void allowDependentGrids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Decided once per process, on the device current at the first launch (one
// GPU per rank).
inline bool dependentLaunchEnabled() {
    static const bool enabled = [] {
        if (!::haloex::detail::environmentSwitch("HALOEX_PDL", true,
                                                 "programmatic dependent launch, where the GPU "
                                                 "has compute capability 9 or more")) {
            return false;
        }
        int device = 0, major = 0;
        HALOEX_CUDA_CHECK(cudaGetDevice(&device));
        HALOEX_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
        return major >= 9;
    }();
    return enabled;
}

// launchDependentSignalling (below), or without the programmatic mark
// (StreamOrder::Full).
template <class... Params, class... Args>
void launchOrderedSignalling(StreamOrder order, cudaEvent_t launched, void (*kernel)(Params...), dim3 grid, dim3 block,
                             std::size_t sharedBytes, cudaStream_t stream, Args&&... args) {
    cudaLaunchAttribute attributes[2]{};
    unsigned count = 0;
    if (order == StreamOrder::Programmatic && dependentLaunchEnabled()) {
        attributes[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attributes[count].val.programmaticStreamSerializationAllowed = 1;
        ++count;
    }
    if (launched != nullptr) {
        attributes[count].id = cudaLaunchAttributeLaunchCompletionEvent;
        attributes[count].val.launchCompletionEvent.event = launched;
        attributes[count].val.launchCompletionEvent.flags = 0;
        ++count;
    }
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = sharedBytes;
    config.stream = stream;
    config.attrs = attributes;
    config.numAttrs = count;
    HALOEX_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, static_cast<Params>(std::forward<Args>(args))...));
}

// kernel<<<grid, block, sharedBytes, stream>>>(args...), marked as a
// programmatic dependent of the previous kernel on `stream` (when enabled).
// Captured into CUDA graphs as a programmatic edge.
// `launched` (not null): also recorded once every block of the kernel has
// begun (a launch-completion event; CUDA calls it best effort: a stream
// that waits for it may wait for the kernel's end instead). Made with
// cudaEventDisableTiming. In a stream capture, an edge from the kernel's
// launch-completion port.
template <class... Params, class... Args>
void launchDependentSignalling(cudaEvent_t launched, void (*kernel)(Params...), dim3 grid, dim3 block,
                               std::size_t sharedBytes, cudaStream_t stream, Args&&... args) {
    launchOrderedSignalling(StreamOrder::Programmatic, launched, kernel, grid, block, sharedBytes, stream,
                            std::forward<Args>(args)...);
}

template <class... Params, class... Args>
void launchDependent(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t sharedBytes, cudaStream_t stream,
                     Args&&... args) {
    launchDependentSignalling(nullptr, kernel, grid, block, sharedBytes, stream, std::forward<Args>(args)...);
}

// launchDependent, or a plain launch (StreamOrder::Full).
template <class... Params, class... Args>
void launchOrdered(StreamOrder order, void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t sharedBytes,
                   cudaStream_t stream, Args&&... args) {
    launchOrderedSignalling(order, nullptr, kernel, grid, block, sharedBytes, stream, std::forward<Args>(args)...);
}

}  // namespace haloex::cuda
