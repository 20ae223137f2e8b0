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

// The table's pulses and entries (see HomeStores::rebuild), without signals or shifts.
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

// The pulses whose receivers the storing kernel signals: those that send
// home atoms alone (or nothing), by load/store, each signalled with one word.
unsigned homeSignalledPulses(const std::vector<PulseRecord>& records, bool perPulseSignals, int withholdPulse) {
    if (!perPulseSignals) return 0;
    unsigned mask = 0;
    for (int p = 0; p < static_cast<int>(records.size()) && p < transport::HomeCoordinateStores::kMaxPulses; ++p) {
        const PulseRecord& r = records[p];
        if (r.sendCount != r.numIndependent || r.sendPath == PathKind::Put || r.peerCoordSignal == nullptr ||
            p == withholdPulse) {
            continue;
        }
        mask |= 1u << p;
    }
    return mask;
}

// `stores` with those pulses' signals (none where the mask is 0).
transport::HomeCoordinateStores withHomeSignals(transport::HomeCoordinateStores stores,
                                                const std::vector<PulseRecord>& records, unsigned signalled,
                                                const std::uint64_t* sequence, unsigned* blockCounter) {
    stores.numSignals = 0;
    for (int p = 0; p < static_cast<int>(records.size()); ++p) {
        if (((signalled >> p) & 1u) != 0) stores.signals[stores.numSignals++] = records[p].peerCoordSignal;
    }
    stores.sequence = stores.numSignals > 0 ? sequence : nullptr;
    stores.blockCounter = stores.numSignals > 0 ? blockCounter : nullptr;
    return stores;
}

}  // namespace

void HomeStores::rebuild(const std::vector<PulseRecord>& records, int numHome, std::uint64_t* sequence,
                         bool perPulseSignals, int withholdPulse) {
    stores_ = buildHomeStores(records, numHome, entries_);
    if (blockCounter_.size() == 0) blockCounter_.resizeZeroed(1);
    signalled_ = stores_ ? homeSignalledPulses(records, perPulseSignals, withholdPulse) : 0u;
    if (stores_) stores_ = withHomeSignals(*stores_, records, signalled_, sequence, blockCounter_.data());
    advanceKernel<<<1, 1, 0, cudaStreamLegacy>>>(sequence);
    HALOEX_CUDA_CHECK_LAUNCH();
}

std::optional<transport::HomeCoordinateStores> HomeStores::table(const plan::Box& box) const {
    if (!stores_) return std::nullopt;
    transport::HomeCoordinateStores stores = *stores_;
    for (int k = 0; k < stores.numPulses; ++k) {
        auto& pulse = stores.pulses[k];
        pulse.shift = pulseShift(pulse.shiftSign, box.length[pulse.dim]);
    }
    return stores;
}

}  // namespace haloex::nvshmem_detail
