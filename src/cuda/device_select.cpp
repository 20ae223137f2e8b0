#include "haloex/cuda/device_select.hpp"

#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fmt/format.h>

#include "haloex/cuda/check.hpp"
#include "haloex/cuda/device_buffer.hpp"

namespace haloex::cuda {
namespace {

// Fixed-size record so the identities can be all-gathered as bytes.
struct PackedIdentity {
    std::array<char, 64> host{};
    std::array<char, 32> busId{};
    int device = -1;
};

std::string hostName() {
    std::array<char, 256> name{};
    if (gethostname(name.data(), name.size() - 1) != 0) return "unknown-host";
    return std::string(name.data());
}

template <std::size_t N>
void copyTruncated(std::array<char, N>& out, const std::string& text) {
    const std::size_t n = std::min(text.size(), N - 1);
    std::memcpy(out.data(), text.data(), n);
    out[n] = '\0';
}

}  // namespace

int selectDevice(const runtime::World& world, bool allowSharedGpus) {
    const int count = deviceCount();
    if (count == 0) {
        throwError(ErrorKind::Cuda, fmt::format("rank {} on {}: no CUDA device is visible (check the driver, "
                                                "nvidia-smi and CUDA_VISIBLE_DEVICES)",
                                                world.rank(), hostName()));
    }
    if (world.localSize() > count && !allowSharedGpus) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{} ranks on this node ({}) but {} GPUs; pass --allow-shared-gpus (use MPS) or "
                               "launch {} ranks",
                               world.localSize(), hostName(), count, count));
    }
    const int device = world.localRank() % count;
    HALOEX_CUDA_CHECK(cudaSetDevice(device));
    return device;
}

std::vector<GpuIdentity> gatherGpuIdentities(runtime::World& world) {
    PackedIdentity mine;
    HALOEX_CUDA_CHECK(cudaGetDevice(&mine.device));
    HALOEX_CUDA_CHECK(cudaDeviceGetPCIBusId(mine.busId.data(), static_cast<int>(mine.busId.size()), mine.device));
    copyTruncated(mine.host, hostName());
    const std::vector<PackedIdentity> all = world.allGather(mine);
    std::vector<GpuIdentity> out;
    out.reserve(all.size());
    for (const PackedIdentity& p : all) out.push_back({p.host.data(), p.busId.data(), p.device});
    return out;
}

std::optional<std::pair<int, int>> findSharedGpu(const std::vector<GpuIdentity>& gpus) {
    for (std::size_t a = 0; a < gpus.size(); ++a) {
        for (std::size_t b = a + 1; b < gpus.size(); ++b) {
            if (gpus[a].host == gpus[b].host && gpus[a].busId == gpus[b].busId) {
                return std::pair{static_cast<int>(a), static_cast<int>(b)};
            }
        }
    }
    return std::nullopt;
}

std::string describeSharedGpu(const std::vector<GpuIdentity>& gpus) {
    const auto shared = findSharedGpu(gpus);
    if (!shared) return {};
    const GpuIdentity& gpu = gpus[static_cast<std::size_t>(shared->first)];
    return fmt::format("ranks {} and {} share GPU {} on {}", shared->first, shared->second, gpu.busId, gpu.host);
}

}  // namespace haloex::cuda
