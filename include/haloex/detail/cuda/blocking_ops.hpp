#pragma once
// Set-up copies and fills that have finished on the device when they return.
//
// Why not plain cudaMemset / cudaMemcpy: a memset of device memory and a copy
// from pageable host memory may return before the device has done them, and
// they run on the legacy default stream, which the library's non-blocking
// streams do not wait for. A kernel enqueued next on such a stream can then
// overtake them -- rarely on an idle GPU, often when other processes keep its
// SMs busy (MPS), e.g. a zero fill landing after the coordinates were copied.
#include <cuda_runtime.h>

#include <cstddef>

#include "haloex/cuda/check.hpp"

namespace haloex::cuda {

inline void fillBytesNow(void* device, int value, std::size_t bytes) {
    if (bytes == 0) return;
    HALOEX_CUDA_CHECK(cudaMemsetAsync(device, value, bytes, cudaStreamLegacy));
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}

inline void copyToDeviceNow(void* device, const void* host, std::size_t bytes) {
    if (bytes == 0) return;
    HALOEX_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, cudaStreamLegacy));
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}

}  // namespace haloex::cuda
