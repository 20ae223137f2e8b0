// The CUPTI counter of host-blocking CUDA calls (haloex/detail/cuda/api_sync_counter.hpp):
// which names count (anywhere), and on a GPU that it counts exactly the
// blocking calls of the counting thread while switched on.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <memory>
#include <thread>

#include "haloex/core/error.hpp"
#include "haloex/detail/cuda/api_sync_counter.hpp"

namespace {

using haloex::cuda::ApiSyncCounter;

TEST(ApiSyncCounter, NamesTheHostBlockingCalls) {
    for (const char* name :
         {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy", "cuStreamSynchronize",
          "cuStreamSynchronize_ptsz", "cuMemcpyDtoH_v2", "cuCtxSynchronize", "cudaMemset"}) {
        EXPECT_TRUE(ApiSyncCounter::isHostBlocking(name)) << name;
    }
    for (const char* name :
         {"cudaMemcpyAsync", "cudaLaunchKernel", "cudaGraphLaunch", "cudaStreamQuery", "cudaEventRecord",
          "cudaStreamWaitEvent", "cuLaunchKernel", "cuMemcpyDtoHAsync_v2", "cudaMemsetAsync"}) {
        EXPECT_FALSE(ApiSyncCounter::isHostBlocking(name)) << name;
    }
}

bool haveGpu() {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

TEST(ApiSyncCounter, CountsTheCountingThreadsBlockingCallsWhileOn) {
    if (!haveGpu()) GTEST_SKIP() << "no GPU visible";
    std::unique_ptr<ApiSyncCounter> counter;
    try {
        counter = std::make_unique<ApiSyncCounter>();
    } catch (const haloex::Error& error) {
        GTEST_SKIP() << "CUPTI cannot count here: " << error.what();
    }
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    int* device = nullptr;
    ASSERT_EQ(cudaMalloc(&device, sizeof(int)), cudaSuccess);
    int host = 0;

    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);  // off: not counted
    counter->setCounting(true);
    ASSERT_EQ(cudaMemcpyAsync(device, &host, sizeof(int), cudaMemcpyHostToDevice, stream), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(device, 0, sizeof(int), stream), cudaSuccess);
    EXPECT_EQ(counter->total(), 0) << "asynchronous calls are not host-blocking";
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(&host, device, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::thread other([] { cudaDeviceSynchronize(); });  // another thread: not counted
    other.join();
    counter->setCounting(false);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // off again

    EXPECT_EQ(counter->total(), 3);
    const auto calls = counter->byFunction();
    EXPECT_EQ(calls.count("cudaStreamSynchronize") ? calls.at("cudaStreamSynchronize") : 0, 1);
    EXPECT_EQ(calls.count("cudaMemcpy") ? calls.at("cudaMemcpy") : 0, 1);
    EXPECT_EQ(calls.count("cudaDeviceSynchronize") ? calls.at("cudaDeviceSynchronize") : 0, 1);
    cudaFree(device);
    cudaStreamDestroy(stream);
}

}  // namespace
