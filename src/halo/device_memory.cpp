// The halo API's device memory and copies (device_memory.hpp), on CUDA.
#include "device_memory.hpp"

#include <algorithm>
#include <cuda_runtime.h>

#include "haloex/detail/cuda/blocking_ops.hpp"
#include "haloex/cuda/check.hpp"

namespace haloex::halo_detail {

std::string deviceHalfMissing() { return {}; }

DeviceBytes::DeviceBytes(std::size_t bytes, bool zeroed) : bytes_(std::max<std::size_t>(bytes, 1)) {
    void* p = nullptr;
    HALOEX_CUDA_CHECK(cudaMalloc(&p, bytes_));
    data_ = static_cast<std::byte*>(p);
    if (zeroed) cuda::fillBytesNow(data_, 0, bytes_);
}

DeviceBytes::~DeviceBytes() { cudaFree(data_); }

void copyDeviceNow(void* dst, const void* src, std::size_t bytes) {
    HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
    HALOEX_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cudaStreamLegacy));
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}

void copyHostToDevice(void* dst, const void* host, std::size_t bytes, transport::StreamHandle stream) {
    const auto s = static_cast<cudaStream_t>(stream);
    HALOEX_CUDA_CHECK(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, s));
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(s));
}

void copyDeviceToHost(void* host, const void* src, std::size_t bytes, transport::StreamHandle stream) {
    const auto s = static_cast<cudaStream_t>(stream);
    HALOEX_CUDA_CHECK(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, s));
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(s));
}

}  // namespace haloex::halo_detail
