#pragma once
// What the GPU kernel tests share: the visible skip without a GPU, and
// host <-> device copies of whole vectors that have finished when they return.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "haloex/detail/cuda/blocking_ops.hpp"
#include "haloex/cuda/device_buffer.hpp"

#define HALOEX_REQUIRE_GPU()                                                                                  \
    do {                                                                                                      \
        if (haloex::cuda::deviceCount() == 0)                                                                 \
            GTEST_SKIP() << "no CUDA device visible: GPU test skipped (run `ctest -L gpu` on a GPU machine)"; \
    } while (0)

namespace haloex::testing {

// A device copy of `host` (at least one element, so empty inputs still give a
// valid pointer).
template <class T>
cuda::DeviceBuffer<T> upload(const std::vector<T>& host) {
    cuda::DeviceBuffer<T> d(std::max<std::size_t>(host.size(), 1));
    cuda::copyToDeviceNow(d.data(), host.data(), host.size() * sizeof(T));
    return d;
}

// The first `count` elements of `d`, after all device work has finished.
template <class T>
std::vector<T> download(const cuda::DeviceBuffer<T>& d, std::size_t count) {
    std::vector<T> host(count);
    HALOEX_CUDA_CHECK(cudaDeviceSynchronize());
    if (count) HALOEX_CUDA_CHECK(cudaMemcpy(host.data(), d.data(), count * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
}

}  // namespace haloex::testing
