// The table of home coordinate stores (home_stores.hpp).
#include "home_stores.hpp"

#include "haloex/cuda/check.hpp"

namespace haloex::nvshmem_detail {
namespace {

// entryOfHome[map[i]] = i for the pulse's independent entries (home atoms,
// each at most once per pulse); the rest stay -1.
__global__ void entriesOfHomeKernel(const int* __restrict__ map, int numIndependent, int* __restrict__ entryOfHome) {
    const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < numIndependent) entryOfHome[map[i]] = i;
}

}  // namespace

std::optional<transport::HomeCoordinateStores> buildHomeStores(const std::vector<PulseRecord>& records, int numHome,
                                                               cuda::DeviceBuffer<int>& entries) {
    using transport::HomeCoordinateStores;
    std::vector<int> sending;
    for (int p = 0; p < static_cast<int>(records.size()); ++p) {
        if (records[p].numIndependent == 0) continue;
        if (records[p].sendPath == PathKind::Put) return std::nullopt;
        sending.push_back(p);
    }
    if (sending.empty() || static_cast<int>(sending.size()) > HomeCoordinateStores::kMaxPulses) return std::nullopt;
    const auto n = static_cast<std::size_t>(numHome);
    entries.resize(sending.size() * n);
    HALOEX_CUDA_CHECK(cudaMemsetAsync(entries.data(), 0xff, entries.bytes(), cudaStreamLegacy));  // -1
    HomeCoordinateStores stores;
    for (const int p : sending) {
        const PulseRecord& r = records[p];
        int* entryOfHome = entries.data() + static_cast<std::size_t>(stores.numPulses) * n;
        constexpr int kThreads = 256;
        entriesOfHomeKernel<<<(r.numIndependent + kThreads - 1) / kThreads, kThreads, 0, cudaStreamLegacy>>>(
            r.indexMap, r.numIndependent, entryOfHome);
        HALOEX_CUDA_CHECK_LAUNCH();
        stores.pulses[stores.numPulses++] = {r.peerX + r.remoteRecvOffset, entryOfHome, r.dim, r.shiftSign, 0.0f};
    }
    return stores;
}

transport::HomeCoordinateStores withShifts(transport::HomeCoordinateStores stores, const plan::Box& box) {
    for (int k = 0; k < stores.numPulses; ++k) {
        auto& pulse = stores.pulses[k];
        pulse.shift = pulseShift(pulse.shiftSign, box.length[pulse.dim]);
    }
    return stores;
}

}  // namespace haloex::nvshmem_detail
