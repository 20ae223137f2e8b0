// Gridding on the GPU: bounds, column keys, sort, clusters of 8, bounding
// boxes. Mirrors buildLayoutReference() (cluster_reference.cpp) step by step,
// so the layouts are identical.
#include <cub/block/block_reduce.cuh>
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <climits>
#include <vector>

#include "count_scan.cuh"
#include "nonbonded_internal.cuh"

namespace haloex::md::gpu::detail {
namespace {

constexpr int kBoundsThreads = 256;
constexpr int kBoundsBlocks = 120;  // per atom set; partials are combined on the host
constexpr int kThreads = 256;

struct BoundsMerge {
    __device__ BoundsPartial operator()(const BoundsPartial& a, const BoundsPartial& b) const {
        BoundsPartial r;
        for (int d = 0; d < 3; ++d) {
            r.lo[d] = fminf(a.lo[d], b.lo[d]);
            r.hi[d] = fmaxf(a.hi[d], b.hi[d]);
        }
        r.count = a.count + b.count;
        r.firstNonFinite = min(a.firstNonFinite, b.firstNonFinite);
        return r;
    }
};

__device__ inline bool isPaddingAtom(const std::uint8_t* zone, int i) {
    return zone != nullptr && (zone[i] & plan::kPaddingMask) != 0;
}

// blockIdx.y = 0: home atoms [0, numHome); 1: halo atoms [numHome, numLocal).
__global__ void __launch_bounds__(kBoundsThreads)
    boundsKernel(const Vec3f* __restrict__ x, const std::uint8_t* __restrict__ zone, int numHome, int numLocal,
                 BoundsPartial* __restrict__ partials) {
    const int begin = blockIdx.y == 0 ? 0 : numHome;
    const int end = blockIdx.y == 0 ? numHome : numLocal;
    BoundsPartial mine;
    for (int d = 0; d < 3; ++d) {
        mine.lo[d] = INFINITY;
        mine.hi[d] = -INFINITY;
    }
    mine.count = 0;
    mine.firstNonFinite = INT_MAX;
    for (int i = begin + blockIdx.x * blockDim.x + threadIdx.x; i < end; i += gridDim.x * blockDim.x) {
        if (blockIdx.y == 1 && isPaddingAtom(zone, i)) continue;  // home atoms are never padding
        const Vec3f p = x[i];
        if (!(isfinite(p.x) && isfinite(p.y) && isfinite(p.z))) {
            mine.firstNonFinite = min(mine.firstNonFinite, i);
            continue;
        }
        mine.lo[0] = fminf(mine.lo[0], p.x);
        mine.lo[1] = fminf(mine.lo[1], p.y);
        mine.lo[2] = fminf(mine.lo[2], p.z);
        mine.hi[0] = fmaxf(mine.hi[0], p.x);
        mine.hi[1] = fmaxf(mine.hi[1], p.y);
        mine.hi[2] = fmaxf(mine.hi[2], p.z);
        ++mine.count;
    }
    using Reduce = cub::BlockReduce<BoundsPartial, kBoundsThreads>;
    __shared__ typename Reduce::TempStorage storage;
    const BoundsPartial total = Reduce(storage).Reduce(mine, BoundsMerge{});
    if (threadIdx.x == 0) partials[blockIdx.y * gridDim.x + blockIdx.x] = total;
}

__global__ void keysKernel(const Vec3f* __restrict__ x, const std::uint8_t* __restrict__ zone, int numHome,
                           int numLocal, ColumnGrid home, ColumnGrid halo, std::uint64_t* __restrict__ keys,
                           int* __restrict__ atoms, int* __restrict__ columnCount) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= numLocal) return;
    atoms[i] = i;
    if (i >= numHome && isPaddingAtom(zone, i)) {
        keys[i] = kNoAtomKey;
        return;
    }
    const ColumnGrid& g = i < numHome ? home : halo;
    const Vec3f p = x[i];
    const int column = columnOf(g, p.x, p.y);
    keys[i] = sortKey(g, column, p.z);
    atomicAdd(&columnCount[column], 1);
}

__global__ void clusterColumnKernel(const int* __restrict__ columnClusterStart, int numColumns,
                                    int* __restrict__ clusterColumn) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= numColumns) return;
    for (int k = columnClusterStart[c]; k < columnClusterStart[c + 1]; ++k) clusterColumn[k] = c;
}

// One thread per slot: which atom sits there, its zone, charge and position.
// Launched over the most slots the columns can need: the cluster counts are
// read here from the scan (columnClusterStart at homeColumns and numColumns),
// not from the host, so the grid needs no host read of them.
__global__ void fillSlotsKernel(const Vec3f* __restrict__ x, const float* __restrict__ charge,
                                const std::uint8_t* __restrict__ zone, const int* __restrict__ sortedAtoms,
                                const int* __restrict__ columnAtomStart, const int* __restrict__ columnClusterStart,
                                const int* __restrict__ clusterColumn, int homeColumns, int numColumns,
                                float sqrtCoulomb, int* __restrict__ atomOfSlot, std::uint8_t* __restrict__ zoneOfSlot,
                                float* __restrict__ chargeOfSlot, float4* __restrict__ xqLocal,
                                float4* __restrict__ xqNonlocal) {
    const long long slot = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    const long long numSlots = static_cast<long long>(columnClusterStart[numColumns]) * kClusterSize;
    const long long numHomeSlots = static_cast<long long>(columnClusterStart[homeColumns]) * kClusterSize;
    if (slot >= numSlots) return;
    const int cluster = static_cast<int>(slot / kClusterSize);
    const int column = clusterColumn[cluster];
    const int k = (cluster - columnClusterStart[column]) * kClusterSize + static_cast<int>(slot % kClusterSize);
    const int count = columnAtomStart[column + 1] - columnAtomStart[column];
    const int atom = k < count ? sortedAtoms[columnAtomStart[column] + k] : -1;
    float4 xq = make_float4(kFarAway, kFarAway, kFarAway, 0.0f);
    std::uint8_t z = plan::kPaddingMask;
    if (atom >= 0) {
        const Vec3f p = x[atom];
        xq = make_float4(p.x, p.y, p.z, charge[atom] * sqrtCoulomb);
        z = zone != nullptr ? zone[atom] : std::uint8_t{0};
    }
    atomOfSlot[slot] = atom;
    zoneOfSlot[slot] = z;
    chargeOfSlot[slot] = xq.w;
    xqNonlocal[slot] = xq;
    if (slot < numHomeSlots) xqLocal[slot] = xq;
}

__global__ void boundingBoxKernel(const float4* __restrict__ xq, const int* __restrict__ atomOfSlot,
                                  const int* __restrict__ numClusters, float4* __restrict__ bboxLo,
                                  float4* __restrict__ bboxHi) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= *numClusters) return;
    // Slot 0 of a cluster always holds an atom (columns fill from the start).
    float4 lo = xq[c * kClusterSize];
    float4 hi = lo;
    for (int a = 1; a < kClusterSize; ++a) {
        if (atomOfSlot[c * kClusterSize + a] < 0) continue;
        const float4 p = xq[c * kClusterSize + a];
        lo = make_float4(minf(lo.x, p.x), minf(lo.y, p.y), minf(lo.z, p.z), 0.f);
        hi = make_float4(maxf(hi.x, p.x), maxf(hi.y, p.y), maxf(hi.z, p.z), 0.f);
    }
    lo.w = hi.w = 0.f;
    bboxLo[c] = lo;
    bboxHi[c] = hi;
}

AtomBounds combine(const BoundsPartial* partials, int count) {
    AtomBounds b;
    for (int k = 0; k < count; ++k) {
        const BoundsPartial& p = partials[k];
        if (p.count == 0) continue;
        if (b.count == 0) {
            b.lo = {p.lo[0], p.lo[1], p.lo[2]};
            b.hi = {p.hi[0], p.hi[1], p.hi[2]};
        } else {
            b.lo = {minf(b.lo.x, p.lo[0]), minf(b.lo.y, p.lo[1]), minf(b.lo.z, p.lo[2])};
            b.hi = {maxf(b.hi.x, p.hi[0]), maxf(b.hi.y, p.hi[1]), maxf(b.hi.z, p.hi[2])};
        }
        b.count += p.count;
    }
    return b;
}

int bitsFor(int value) {
    int bits = 1;
    while ((1LL << bits) <= value) ++bits;
    return bits;
}

}  // namespace

void buildLayout(DeviceLayout& layout, const Vec3f* dX, const float* dCharge, const std::uint8_t* dZoneMask,
                 int numHome, int numLocal, float sqrtCoulomb, double growth, cudaStream_t stream) {
    layout.numHome = numHome;
    layout.numLocal = numLocal;

    // 1. Bounds of the home and halo atoms (and the first non-finite atom).
    std::vector<BoundsPartial> host(2 * kBoundsBlocks);
    const std::size_t partialBytes = host.size() * sizeof(BoundsPartial);
    layout.boundsPartials.reserve(partialBytes);
    auto* partials = reinterpret_cast<BoundsPartial*>(layout.boundsPartials.data());
    boundsKernel<<<dim3(kBoundsBlocks, 2), kBoundsThreads, 0, stream>>>(dX, dZoneMask, numHome, numLocal, partials);
    HALOEX_CUDA_CHECK_LAUNCH();
    HALOEX_CUDA_CHECK(cudaMemcpyAsync(host.data(), partials, partialBytes, cudaMemcpyDeviceToHost, stream));
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    int firstBad = INT_MAX;
    for (const BoundsPartial& p : host) firstBad = std::min(firstBad, p.firstNonFinite);
    if (firstBad != INT_MAX) throwNonFiniteAtom(firstBad, numHome);
    const AtomBounds home = combine(host.data(), kBoundsBlocks);
    const AtomBounds halo = combine(host.data() + kBoundsBlocks, kBoundsBlocks);
    layout.grids = chooseGrids(home, halo);
    layout.numHomeAtoms = home.count;
    layout.numHaloAtoms = halo.count;
    const int numColumns = layout.numColumns();

    // 2. Column keys and the sort by (column, z, atom index).
    const std::size_t n = static_cast<std::size_t>(std::max(numLocal, 1));
    reserveWithHeadroom(layout.keys, n, growth);
    reserveWithHeadroom(layout.keysSorted, n, growth);
    reserveWithHeadroom(layout.atoms, n, growth);
    reserveWithHeadroom(layout.atomsSorted, n, growth);
    reserveWithHeadroom(layout.columnCount, numColumns + 1, growth);
    reserveWithHeadroom(layout.columnAtomStart, numColumns + 1, growth);
    reserveWithHeadroom(layout.columnClusterStart, numColumns + 1, growth);
    layout.columnCount.zeroAsync(stream);
    if (numLocal > 0) {
        keysKernel<<<blocksFor(numLocal, kThreads), kThreads, 0, stream>>>(dX, dZoneMask, numHome, numLocal,
                                                                           layout.grids.home, layout.grids.halo,
                                                                           layout.keys.data(), layout.atoms.data(),
                                                                           layout.columnCount.data());
        HALOEX_CUDA_CHECK_LAUNCH();
    }
    // Keys of padding atoms are all ones in every bit the sort looks at, so
    // they still sort last: columns stay below 2^(endBit-32) - 1.
    const int endBit = 32 + bitsFor(numColumns);
    std::size_t sortBytes = 0;
    HALOEX_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sortBytes, layout.keys.data(), layout.keysSorted.data(),
                                                      layout.atoms.data(), layout.atomsSorted.data(), numLocal, 0,
                                                      endBit, stream));
    const std::size_t scanBytes = scanCountsAndGroupsBytes(numColumns + 1);
    reserveWithHeadroom(layout.cubTemp, std::max({sortBytes, scanBytes, std::size_t{1}}), growth);
    if (numLocal > 0) {
        std::size_t bytes = layout.cubTemp.size();
        HALOEX_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(layout.cubTemp.data(), bytes, layout.keys.data(),
                                                          layout.keysSorted.data(), layout.atoms.data(),
                                                          layout.atomsSorted.data(), numLocal, 0, endBit, stream));
    }

    // 3. Where each column's atoms and clusters start (the count array's
    // last entry is 0).
    scanCountsAndGroups(layout.columnCount.data(), numColumns + 1, kClusterSize, layout.columnAtomStart.data(),
                        layout.columnClusterStart.data(), layout.cubTemp, stream);
    // The cluster counts stay on the device until the pair search reads its
    // totals (one host read for both): sizes and launches use the most the
    // columns can hold, ceil(count / 8) <= (count + 7) / 8 per column.
    const int homeColumns = layout.grids.home.numColumns();
    layout.maxHomeClusters = (layout.numHomeAtoms + (kClusterSize - 1) * homeColumns) / kClusterSize;
    layout.maxClusters =
        layout.maxHomeClusters + (layout.numHaloAtoms + (kClusterSize - 1) * (numColumns - homeColumns)) / kClusterSize;
    layout.numHomeClusters = layout.numClusters = -1;  // set by searchLists

    // 4. Slots: atom, zone, charge and position of every cluster position.
    const std::size_t slots = static_cast<std::size_t>(
        std::max<long long>(static_cast<long long>(layout.maxClusters) * kClusterSize, kClusterSize));
    reserveWithHeadroom(layout.clusterColumn, std::max(layout.maxClusters, 1), growth);
    reserveWithHeadroom(layout.atomOfSlot, slots, growth);
    reserveWithHeadroom(layout.zoneOfSlot, slots, growth);
    reserveWithHeadroom(layout.chargeOfSlot, slots, growth);
    reserveWithHeadroom(layout.xqLocal, slots, growth);
    reserveWithHeadroom(layout.xqNonlocal, slots, growth);
    reserveWithHeadroom(layout.fLocal, slots, growth);
    reserveWithHeadroom(layout.fNonlocal, slots, growth);
    reserveWithHeadroom(layout.bboxLo, std::max(layout.maxClusters, 1), growth);
    reserveWithHeadroom(layout.bboxHi, std::max(layout.maxClusters, 1), growth);
    layout.fLocal.zeroAsync(stream);
    layout.fNonlocal.zeroAsync(stream);
    if (layout.numHomeAtoms + layout.numHaloAtoms == 0) {  // no atom, no cluster
        layout.numHomeClusters = layout.numClusters = 0;
        return;
    }
    clusterColumnKernel<<<blocksFor(numColumns, kThreads), kThreads, 0, stream>>>(layout.columnClusterStart.data(),
                                                                                  numColumns,
                                                                                  layout.clusterColumn.data());
    HALOEX_CUDA_CHECK_LAUNCH();
    fillSlotsKernel<<<blocksFor(static_cast<long long>(layout.maxClusters) * kClusterSize, kThreads), kThreads, 0,
                      stream>>>(dX, dCharge, dZoneMask, layout.atomsSorted.data(), layout.columnAtomStart.data(),
                                layout.columnClusterStart.data(), layout.clusterColumn.data(), homeColumns, numColumns,
                                sqrtCoulomb, layout.atomOfSlot.data(), layout.zoneOfSlot.data(),
                                layout.chargeOfSlot.data(), layout.xqLocal.data(), layout.xqNonlocal.data());
    HALOEX_CUDA_CHECK_LAUNCH();
    boundingBoxKernel<<<blocksFor(layout.maxClusters, kThreads), kThreads, 0, stream>>>(
        layout.xqNonlocal.data(), layout.atomOfSlot.data(), layout.columnClusterStart.data() + numColumns,
        layout.bboxLo.data(), layout.bboxHi.data());
    HALOEX_CUDA_CHECK_LAUNCH();
}

}  // namespace haloex::md::gpu::detail
