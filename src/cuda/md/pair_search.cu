// Cluster-pair search on the GPU: one warp per i cluster. Two passes with
// identical decisions -- count, then (after a scan gives every i cluster its
// place) fill -- so the list is dense, deterministic and equal to
// searchReference() (cluster_reference.cpp) element by element.
//
// Lanes test 32 candidate j clusters of a column at once (half-list rule and
// bounding-box distance); each surviving candidate is then examined by the
// whole warp, lane = 8 t + b taking atom pairs (t, b) and (t + 4, b): the
// ballots of those bits are exactly the 64-bit interaction mask.
#include <cub/device/device_scan.cuh>

#include <algorithm>

#include "nonbonded_internal.cuh"

namespace haloex::md::gpu::detail {
namespace {

constexpr int kSearchThreads = 128;

struct SearchParams {
    ColumnGrid jGrid;
    Float3 boxLengths;
    int periodic[3];
    float rlist2;
    float radius;
    int numTasks;
    int numHomeClusters;
    int nonlocal;
    int maxJ;
};

__device__ inline Float3 xyz(float4 v) { return {v.x, v.y, v.z}; }

template <bool kFill>
__global__ void __launch_bounds__(kSearchThreads)
    searchKernel(SearchParams p, const int* __restrict__ columnClusterStart, const float4* __restrict__ bboxLo,
                 const float4* __restrict__ bboxHi, const float4* __restrict__ xq,
                 const std::uint8_t* __restrict__ zoneOfSlot, int* __restrict__ pairCount,
                 int* __restrict__ entryCount, const int* __restrict__ pairOffset, const int* __restrict__ entryOffset,
                 ClusterPair* __restrict__ pairs, ClusterEntry* __restrict__ entries,
                 unsigned long long* __restrict__ counters) {
    const int ci = static_cast<int>((static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32);
    if (ci >= p.numTasks) return;  // uniform per warp
    const int lane = threadIdx.x & 31;
    const int ti = lane >> 3;  // i slots ti and ti + 4
    const int tj = lane & 7;   // j slot
    const bool sameGrid = !p.nonlocal || ci >= p.numHomeClusters;
    const Float3 iLo = xyz(bboxLo[ci]);
    const Float3 iHi = xyz(bboxHi[ci]);
    const Float3 xi0 = xyz(xq[ci * kClusterSize + ti]);
    const Float3 xi1 = xyz(xq[ci * kClusterSize + ti + 4]);
    const std::uint8_t zi0 = zoneOfSlot[ci * kClusterSize + ti];
    const std::uint8_t zi1 = zoneOfSlot[ci * kClusterSize + ti + 4];
    const int base = kFill ? pairOffset[ci] : 0;
    const int limit = kFill ? pairCount[ci] : 0;
    int count = 0;
    unsigned long long atomPairs = 0;

    for (int s = 0; s < kNumShifts; ++s) {
        if (!shiftAllowed(s, p.periodic[0] != 0, p.periodic[1] != 0, p.periodic[2] != 0)) continue;
        const Float3 sv = shiftVector(s, p.boxLengths);
        const IndexRange rx = cellRange(regionLo(iLo.x, sv.x, p.radius), regionHi(iHi.x, sv.x, p.radius),
                                        p.jGrid.x0, p.jGrid.invCellX, p.jGrid.nx);
        const IndexRange ry = cellRange(regionLo(iLo.y, sv.y, p.radius), regionHi(iHi.y, sv.y, p.radius),
                                        p.jGrid.y0, p.jGrid.invCellY, p.jGrid.ny);
        for (int cy = ry.lo; cy <= ry.hi; ++cy) {
            for (int cx = rx.lo; cx <= rx.hi; ++cx) {
                const int column = p.jGrid.firstColumn + cx + p.jGrid.nx * cy;
                const int begin = columnClusterStart[column];
                const int end = columnClusterStart[column + 1];
                for (int k0 = begin; k0 < end; k0 += 32) {
                    const int cj = k0 + lane;
                    bool pass = false;
                    if (cj < end && clusterPairInHalfList(ci, cj, s, sameGrid)) {
                        pass = boxDistance2(iLo, iHi, xyz(bboxLo[cj]), xyz(bboxHi[cj]), sv) < p.rlist2;
                    }
                    unsigned candidates = __ballot_sync(kFullWarp, pass);
                    while (candidates != 0) {
                        const int cjj = k0 + __ffs(candidates) - 1;
                        candidates &= candidates - 1;
                        const Float3 xj = xyz(xq[cjj * kClusterSize + tj]);
                        const std::uint8_t zj = zoneOfSlot[cjj * kClusterSize + tj];
                        const bool self = cjj == ci;
                        const bool in0 = atomPairInList(zi0, zj, ti, tj, self, s);
                        const bool in1 = atomPairInList(zi1, zj, ti + 4, tj, self, s);
                        const bool near = (in0 && atomDistance2(xi0, xj, sv) < p.rlist2) ||
                                          (in1 && atomDistance2(xi1, xj, sv) < p.rlist2);
                        const unsigned maskLo = __ballot_sync(kFullWarp, in0);
                        const unsigned maskHi = __ballot_sync(kFullWarp, in1);
                        if (__any_sync(kFullWarp, near)) {
                            if constexpr (kFill) {
                                if (lane == 0 && count < limit) {
                                    pairs[base + count] = ClusterPair{cjj, s, maskLo, maskHi};
                                }
                                atomPairs += __popc(maskLo) + __popc(maskHi);
                            }
                            ++count;
                        }
                    }
                }
            }
        }
    }

    const int numEntries = (count + p.maxJ - 1) / p.maxJ;
    if constexpr (!kFill) {
        if (lane == 0) {
            pairCount[ci] = count;
            entryCount[ci] = numEntries;
        }
    } else {
        if (lane == 0) {
            if (count != limit) atomicOr(&counters[1], 1ull);  // the passes disagree: a bug
            atomicAdd(&counters[0], atomPairs);
        }
        if (count == limit) {
            const int first = entryOffset[ci];
            for (int e = lane; e < numEntries; e += 32) {
                entries[first + e] = ClusterEntry{ci, base + e * p.maxJ, base + min(count, (e + 1) * p.maxJ), 0};
            }
        }
    }
}

// One warp per entry of the non-local list: flags the home clusters it names.
__global__ void flagNonlocalHomeClusters(const ClusterEntry* __restrict__ entries, int numEntries,
                                         const ClusterPair* __restrict__ pairs, int numHomeClusters,
                                         int* __restrict__ flag) {
    const long long e = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
    if (e >= numEntries) return;
    const int lane = static_cast<int>(threadIdx.x & 31);
    const ClusterEntry entry = entries[e];
    if (lane == 0 && entry.ci < numHomeClusters) flag[entry.ci] = 1;
    for (int k = entry.jBegin + lane; k < entry.jEnd; k += 32) {
        const int cj = pairs[k].cj;
        if (cj < numHomeClusters) flag[cj] = 1;
    }
}

__global__ void compactFlagged(const int* __restrict__ flag, int n, int* __restrict__ out, int* __restrict__ count) {
    const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (c < n && flag[c] != 0) out[atomicAdd(count, 1)] = c;
}

}  // namespace

void collectNonlocalHomeClusters(DeviceLayout& layout, const DeviceList& nonlocalList, double growth,
                                 cudaStream_t stream) {
    layout.numNonlocalHomeClusters = 0;
    const int numHome = layout.numHomeClusters;
    if (nonlocalList.numEntries == 0 || numHome == 0) return;
    reserveWithHeadroom(layout.clusterFlag, static_cast<std::size_t>(numHome), growth);
    reserveWithHeadroom(layout.nonlocalHomeClusters, static_cast<std::size_t>(numHome), growth);
    reserveWithHeadroom(layout.flaggedCount, 1, growth);
    layout.clusterFlag.zeroAsync(stream);
    layout.flaggedCount.zeroAsync(stream);
    flagNonlocalHomeClusters<<<blocksFor(static_cast<long long>(nonlocalList.numEntries) * 32, kSearchThreads),
                               kSearchThreads, 0, stream>>>(nonlocalList.entries.data(), nonlocalList.numEntries,
                                                            nonlocalList.pairs.data(), numHome,
                                                            layout.clusterFlag.data());
    HALOEX_CUDA_CHECK_LAUNCH();
    compactFlagged<<<blocksFor(numHome, kSearchThreads), kSearchThreads, 0, stream>>>(
        layout.clusterFlag.data(), numHome, layout.nonlocalHomeClusters.data(), layout.flaggedCount.data());
    HALOEX_CUDA_CHECK_LAUNCH();
    int count = 0;
    HALOEX_CUDA_CHECK(
        cudaMemcpyAsync(&count, layout.flaggedCount.data(), sizeof(int), cudaMemcpyDeviceToHost, stream));
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    layout.numNonlocalHomeClusters = count;
}

cudaFuncAttributes searchKernelAttributes() {
    cudaFuncAttributes a{};
    HALOEX_CUDA_CHECK(cudaFuncGetAttributes(&a, searchKernel<true>));
    return a;
}

void searchList(DeviceList& list, DeviceLayout& layout, bool nonlocal, const SearchSettings& settings,
                double growth, cudaStream_t stream) {
    list.numEntries = 0;
    list.numPairs = 0;
    list.atomPairs = 0;
    const int numTasks = nonlocal ? layout.numClusters : layout.numHomeClusters;
    const bool haveJ = nonlocal ? layout.numHaloAtoms > 0 : layout.numHomeClusters > 0;
    if (numTasks == 0 || !haveJ) return;

    reserveWithHeadroom(list.pairCount, numTasks + 1, growth);
    reserveWithHeadroom(list.entryCount, numTasks + 1, growth);
    reserveWithHeadroom(list.pairOffset, numTasks + 1, growth);
    reserveWithHeadroom(list.entryOffset, numTasks + 1, growth);
    reserveWithHeadroom(list.counters, 2, growth);
    list.pairCount.zeroAsync(stream);  // the scans read a trailing 0
    list.entryCount.zeroAsync(stream);
    list.counters.zeroAsync(stream);

    SearchParams p{};
    p.jGrid = nonlocal ? layout.grids.halo : layout.grids.home;
    p.boxLengths = boxLengthsF(settings.box);
    for (int d = 0; d < 3; ++d) p.periodic[d] = settings.periodic[d] ? 1 : 0;
    p.rlist2 = rlistSquared(settings.rlist);
    p.radius = columnSearchRadius(settings.rlist);
    p.numTasks = numTasks;
    p.numHomeClusters = layout.numHomeClusters;
    p.nonlocal = nonlocal ? 1 : 0;
    p.maxJ = settings.maxJClustersPerEntry;
    const int blocks = blocksFor(static_cast<long long>(numTasks) * 32, kSearchThreads);

    searchKernel<false><<<blocks, kSearchThreads, 0, stream>>>(
        p, layout.columnClusterStart.data(), layout.bboxLo.data(), layout.bboxHi.data(), layout.xqNonlocal.data(),
        layout.zoneOfSlot.data(), list.pairCount.data(), list.entryCount.data(), nullptr, nullptr, nullptr, nullptr,
        nullptr);
    HALOEX_CUDA_CHECK_LAUNCH();

    std::size_t scanBytes = 0;
    HALOEX_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scanBytes, list.pairCount.data(), list.pairOffset.data(),
                                                    numTasks + 1, stream));
    reserveWithHeadroom(list.cubTemp, std::max<std::size_t>(scanBytes, 1), growth);
    std::size_t bytes = list.cubTemp.size();
    HALOEX_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(list.cubTemp.data(), bytes, list.pairCount.data(),
                                                    list.pairOffset.data(), numTasks + 1, stream));
    bytes = list.cubTemp.size();
    HALOEX_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(list.cubTemp.data(), bytes, list.entryCount.data(),
                                                    list.entryOffset.data(), numTasks + 1, stream));
    int totals[2] = {0, 0};
    HALOEX_CUDA_CHECK(cudaMemcpyAsync(&totals[0], list.pairOffset.data() + numTasks, sizeof(int),
                                      cudaMemcpyDeviceToHost, stream));
    HALOEX_CUDA_CHECK(cudaMemcpyAsync(&totals[1], list.entryOffset.data() + numTasks, sizeof(int),
                                      cudaMemcpyDeviceToHost, stream));
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    list.numPairs = totals[0];
    list.numEntries = totals[1];
    if (list.numPairs == 0) {
        list.numEntries = 0;
        return;
    }
    reserveWithHeadroom(list.pairs, static_cast<std::size_t>(list.numPairs), growth);
    reserveWithHeadroom(list.entries, static_cast<std::size_t>(list.numEntries), growth);

    searchKernel<true><<<blocks, kSearchThreads, 0, stream>>>(
        p, layout.columnClusterStart.data(), layout.bboxLo.data(), layout.bboxHi.data(), layout.xqNonlocal.data(),
        layout.zoneOfSlot.data(), list.pairCount.data(), list.entryCount.data(), list.pairOffset.data(),
        list.entryOffset.data(), list.pairs.data(), list.entries.data(), list.counters.data());
    HALOEX_CUDA_CHECK_LAUNCH();
    unsigned long long counters[2] = {0, 0};
    HALOEX_CUDA_CHECK(
        cudaMemcpyAsync(counters, list.counters.data(), sizeof(counters), cudaMemcpyDeviceToHost, stream));
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (counters[1] != 0) throwSearchPassesDisagree(nonlocal);
    list.atomPairs = static_cast<long long>(counters[0]);
}

}  // namespace haloex::md::gpu::detail
