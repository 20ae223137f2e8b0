// HomeSplit (home_split.hpp): flags from the send maps, then one stable-front
// CUB partition of the atom indices.
#include "haloex/md/gpu/home_split.hpp"

#include <cub/device/device_partition.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <vector>

#include "haloex/cuda/check.hpp"

namespace haloex::md::gpu {
namespace {

constexpr int kThreads = 256;

// interior[map[i]] = 0 for the pulse's independent entries (home atoms).
__global__ void markSentKernel(const int* __restrict__ map, int count, int numHome,
                               std::uint8_t* __restrict__ interior) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    const int atom = map[i];
    if (atom >= 0 && atom < numHome) interior[atom] = 0;
}

void markSent(const int* map, int count, int numHome, std::uint8_t* interior, cudaStream_t stream) {
    if (count <= 0) return;
    markSentKernel<<<(count + kThreads - 1) / kThreads, kThreads, 0, stream>>>(map, count, numHome, interior);
    HALOEX_CUDA_CHECK_LAUNCH();
}

}  // namespace

void HomeSplit::build(const plan::ParticleHaloPlan& plan, int numHome, cudaStream_t stream) {
    const auto n = static_cast<std::size_t>(numHome);
    interior_.reserve(std::max<std::size_t>(n, 1));
    order_.reserve(std::max<std::size_t>(n, 1));
    interiorCount_.resize(1);
    interiorCount_.zeroAsync(stream);
    if (numHome == 0) return;
    HALOEX_CUDA_CHECK(cudaMemsetAsync(interior_.data(), 1, n, stream));
    // Host maps (plans built on the host): their independent entries in one upload.
    std::vector<int> host;
    for (const plan::Pulse& p : plan.pulses) {
        if (!p.sends() || p.indexMapOnDevice()) continue;
        host.insert(host.end(), p.sendIndices.begin(), p.sendIndices.begin() + p.numIndependent);
    }
    if (!host.empty()) {
        hostMaps_.reserve(host.size());
        HALOEX_CUDA_CHECK(
            cudaMemcpyAsync(hostMaps_.data(), host.data(), host.size() * sizeof(int), cudaMemcpyHostToDevice, stream));
        // The upload reads `host` before it leaves this scope.
        HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
        markSent(hostMaps_.data(), static_cast<int>(host.size()), numHome, interior_.data(), stream);
    }
    for (const plan::Pulse& p : plan.pulses) {
        if (p.sends() && p.indexMapOnDevice()) {
            markSent(p.deviceSendIndices, p.numIndependent, numHome, interior_.data(), stream);
        }
    }
    const thrust::counting_iterator<int> atoms(0);
    std::size_t bytes = 0;
    HALOEX_CUDA_CHECK(cub::DevicePartition::Flagged(nullptr, bytes, atoms, interior_.data(), order_.data(),
                                                    interiorCount_.data(), numHome, stream));
    cubTemp_.reserve(std::max<std::size_t>(bytes, 1));
    HALOEX_CUDA_CHECK(cub::DevicePartition::Flagged(cubTemp_.data(), bytes, atoms, interior_.data(), order_.data(),
                                                    interiorCount_.data(), numHome, stream));
}

}  // namespace haloex::md::gpu
