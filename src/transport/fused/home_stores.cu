// The entries of home atoms in their pulses (home_stores.hpp).
#include "home_stores.hpp"

#include "haloex/cuda/check.hpp"

namespace haloex::nvshmem_detail {
namespace {

__global__ void entriesOfHomeKernel(const int* __restrict__ map, int numIndependent, int* __restrict__ entryOfHome) {
    const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < numIndependent) entryOfHome[map[i]] = i;
}

}  // namespace

void writeEntriesOfHome(const int* map, int numIndependent, int* entryOfHome, cudaStream_t stream) {
    if (numIndependent <= 0) return;
    constexpr int kThreads = 256;
    entriesOfHomeKernel<<<(numIndependent + kThreads - 1) / kThreads, kThreads, 0, stream>>>(map, numIndependent,
                                                                                             entryOfHome);
    HALOEX_CUDA_CHECK_LAUNCH();
}

}  // namespace haloex::nvshmem_detail
