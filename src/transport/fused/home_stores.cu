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

__global__ void advanceKernel(std::uint64_t* sequence) { *sequence += 1; }

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

unsigned homeSignalledPulses(const std::vector<PulseRecord>& records, const HomeSignalSource& source) {
    if (!source.perPulseSignals || source.sequence == nullptr || source.blockCounter == nullptr) return 0;
    unsigned mask = 0;
    for (int p = 0; p < static_cast<int>(records.size()) && p < transport::HomeCoordinateStores::kMaxPulses; ++p) {
        const PulseRecord& r = records[p];
        if (r.sendCount != r.numIndependent || r.sendPath == PathKind::Put || r.peerCoordSignal == nullptr ||
            p == source.withholdPulse) {
            continue;
        }
        mask |= 1u << p;
    }
    return mask;
}

transport::HomeCoordinateStores withHomeSignals(transport::HomeCoordinateStores stores,
                                                const std::vector<PulseRecord>& records, unsigned signalled,
                                                const HomeSignalSource& source) {
    stores.numSignals = 0;
    for (int p = 0; p < static_cast<int>(records.size()); ++p) {
        if (((signalled >> p) & 1u) != 0) stores.signals[stores.numSignals++] = records[p].peerCoordSignal;
    }
    stores.sequence = stores.numSignals > 0 ? source.sequence : nullptr;
    stores.blockCounter = stores.numSignals > 0 ? source.blockCounter : nullptr;
    return stores;
}

void skipSequenceValue(std::uint64_t* sequence) {
    advanceKernel<<<1, 1, 0, cudaStreamLegacy>>>(sequence);
    HALOEX_CUDA_CHECK_LAUNCH();
}

transport::HomeCoordinateStores withShifts(transport::HomeCoordinateStores stores, const plan::Box& box) {
    for (int k = 0; k < stores.numPulses; ++k) {
        auto& pulse = stores.pulses[k];
        pulse.shift = pulseShift(pulse.shiftSign, box.length[pulse.dim]);
    }
    return stores;
}

}  // namespace haloex::nvshmem_detail
