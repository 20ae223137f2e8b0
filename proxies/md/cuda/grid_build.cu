// Gridding on the GPU: bounds, grid choice, column keys, sort, clusters of 8,
// bounding boxes -- all on the device, with no host read until the search's
// totals. Mirrors buildLayoutReference() (cluster_reference.cpp) step by
// step, so the layouts are identical.
#include <cub/block/block_reduce.cuh>
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <climits>

#include "column_sort.cuh"
#include "count_scan.cuh"
#include "nonbonded_internal.cuh"

namespace haloex::md::gpu::detail {
namespace {

constexpr int kBoundsThreads = 256;
constexpr int kBoundsBlocks = 120;  // per atom set; gridChoiceKernel combines the partials
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

// The merge's identity: bounds of no atom.
__device__ inline BoundsPartial noAtomBounds() {
    BoundsPartial b;
    for (int d = 0; d < 3; ++d) {
        b.lo[d] = INFINITY;
        b.hi[d] = -INFINITY;
    }
    b.count = 0;
    b.firstNonFinite = INT_MAX;
    return b;
}

// blockIdx.y = 0: home atoms [0, numHome); 1: halo atoms [numHome, numLocal).
__global__ void __launch_bounds__(kBoundsThreads)
    boundsKernel(const Vec3f* __restrict__ x, const std::uint8_t* __restrict__ zone,
                 const BuildSizes* __restrict__ sizes, BoundsPartial* __restrict__ partials) {
    const int numHome = sizes->numHome;
    const int begin = blockIdx.y == 0 ? 0 : numHome;
    const int end = blockIdx.y == 0 ? numHome : sizes->numLocal;
    BoundsPartial mine = noAtomBounds();
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

__device__ inline AtomBounds boundsOf(const BoundsPartial& p) {
    AtomBounds b;
    b.count = p.count;
    if (p.count > 0) {  // min and max are exact: the order of the partials does not matter
        b.lo = {p.lo[0], p.lo[1], p.lo[2]};
        b.hi = {p.hi[0], p.hi[1], p.hi[2]};
    }
    return b;
}

// One block: the partials of both atom sets combined, the grids chosen as
// chooseGrids() does on the host, and whether they fit the build's columns.
__global__ void __launch_bounds__(kBoundsThreads)
    gridChoiceKernel(const BoundsPartial* __restrict__ partials, int columnCapacity, GridState* __restrict__ state) {
    using Reduce = cub::BlockReduce<BoundsPartial, kBoundsThreads>;
    __shared__ typename Reduce::TempStorage storage;
    static_assert(kBoundsBlocks <= kBoundsThreads, "one partial per thread");
    BoundsPartial parts[2];
    for (int set = 0; set < 2; ++set) {
        BoundsPartial mine = noAtomBounds();
        if (threadIdx.x < kBoundsBlocks) mine = partials[set * kBoundsBlocks + threadIdx.x];
        parts[set] = Reduce(storage).Reduce(mine, BoundsMerge{});
        __syncthreads();  // the temporary storage is reused
    }
    if (threadIdx.x != 0) return;
    GridState s;
    s.grids = chooseGrids(boundsOf(parts[0]), boundsOf(parts[1]));
    s.numHomeAtoms = parts[0].count;
    s.numHaloAtoms = parts[1].count;
    s.firstNonFinite = min(parts[0].firstNonFinite, parts[1].firstNonFinite);
    s.skipped = s.firstNonFinite != INT_MAX || s.grids.numColumns() > columnCapacity ? 1 : 0;
    s.numHomeClusters = s.numClusters = 0;
    s.columnTooLong = 0;
    *state = s;
}

// Over the atom capacity: atoms past numLocal, padding atoms and every atom
// of a skipped build sort last and join no column.
__global__ void keysKernel(const Vec3f* __restrict__ x, const std::uint8_t* __restrict__ zone,
                           const BuildSizes* __restrict__ sizes, const GridState* __restrict__ state, int count,
                           std::uint32_t* __restrict__ keys, int* __restrict__ atoms, int* __restrict__ columnCount) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    atoms[i] = i;
    const int numHome = sizes->numHome;
    if (i >= sizes->numLocal || state->skipped != 0 || (i >= numHome && isPaddingAtom(zone, i))) {
        keys[i] = kNoAtomKey;
        return;
    }
    const ColumnGrid& g = i < numHome ? state->grids.home : state->grids.halo;
    const Vec3f p = x[i];
    const int column = columnOf(g, p.x, p.y);
    keys[i] = sortKey(g, column, p.z);
    atomicAdd(&columnCount[column], 1);
}

// The sort by column, then by (z key, atom index) inside each column -- the
// order of a stable sort by sortKey, which the CPU reference does: each atom
// goes to its column's part of `bucket` (in any order, by an atomic cursor)
// with its z key above its index, then one block sorts each column.
__global__ void bucketKernel(const std::uint32_t* __restrict__ keys, int count, const GridState* __restrict__ state,
                             const int* __restrict__ columnAtomStart, int* __restrict__ columnFill,
                             std::uint64_t* __restrict__ bucket) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    const std::uint32_t key = keys[i];
    if (key == kNoAtomKey) return;
    const int zBits = state->grids.home.zBits;
    const int column = static_cast<int>(key >> zBits);
    const std::uint64_t z = key & ((1u << zBits) - 1u);
    bucket[columnAtomStart[column] + atomicAdd(&columnFill[column], 1)] = (z << 32) | static_cast<std::uint32_t>(i);
}

// One block per column: its (z key, index) words sorted in shared memory, the
// indices written in order. A column longer than kColumnSortMax atoms is left
// for the global sort (GridState::columnTooLong).
__global__ void __launch_bounds__(kColumnSortThreads)
    columnSortKernel(const int* __restrict__ columnAtomStart, const std::uint64_t* __restrict__ bucket,
                     GridState* __restrict__ state, int* __restrict__ sortedAtoms) {
    __shared__ std::uint64_t words[kColumnSortMax];
    const int column = blockIdx.x;
    const int begin = columnAtomStart[column];
    const int n = columnAtomStart[column + 1] - begin;
    if (n == 0) return;
    if (n > kColumnSortMax) {  // the build runs again; meanwhile every later kernel reads valid indices
        if (threadIdx.x == 0) atomicOr(&state->columnTooLong, 1);
        for (int k = threadIdx.x; k < n; k += blockDim.x) {
            sortedAtoms[begin + k] = static_cast<int>(bucket[begin + k] & 0xffffffffu);
        }
        return;
    }
    sortColumnInShared(bucket + begin, n, words, sortedAtoms + begin);
}

// Thread 0 also records the cluster totals for the host's one read.
__global__ void clusterColumnKernel(const int* __restrict__ columnClusterStart, int columnCapacity,
                                    GridState* __restrict__ state, int* __restrict__ clusterColumn) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c == 0) {  // a skipped build's grids may lie past the capacity; it has no cluster
        const bool skipped = state->skipped != 0;
        state->numHomeClusters = skipped ? 0 : columnClusterStart[state->grids.halo.firstColumn];
        state->numClusters = skipped ? 0 : columnClusterStart[columnCapacity];
    }
    if (c >= columnCapacity) return;
    for (int k = columnClusterStart[c]; k < columnClusterStart[c + 1]; ++k) clusterColumn[k] = c;
}

// One thread per slot: which atom sits there, its zone, charge and position,
// its force accumulators zeroed; and, by the first thread of each cluster
// (eight consecutive threads of a warp), the cluster's bounding box from the
// other seven by shuffles, in slot order as the CPU reference takes them.
// Launched over the most slots the columns can need (`slotCapacity`); the
// cluster counts come from the scan (columnClusterStart at the home columns
// and at the capacity, where the empty columns past the grids leave the
// total).
static_assert(kThreads % 32 == 0 && 32 % kClusterSize == 0, "clusters of a warp's consecutive lanes");
__global__ void __launch_bounds__(kThreads)
    fillSlotsKernel(const Vec3f* __restrict__ x, const float* __restrict__ charge,
                    const std::uint8_t* __restrict__ zone, const int* __restrict__ sortedAtoms,
                    const int* __restrict__ columnAtomStart, const int* __restrict__ columnClusterStart,
                    const int* __restrict__ clusterColumn, const GridState* __restrict__ state, int columnCapacity,
                    long long slotCapacity, float sqrtCoulomb, int* __restrict__ atomOfSlot,
                    std::uint8_t* __restrict__ zoneOfSlot, float* __restrict__ chargeOfSlot,
                    int* __restrict__ slotOfAtom, float4* __restrict__ xqLocal, float4* __restrict__ xqNonlocal,
                    float4* __restrict__ fLocal, float4* __restrict__ fNonlocal, float4* __restrict__ bboxLo,
                    float4* __restrict__ bboxHi) {
    const long long slot = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (slot < slotCapacity) {  // the scatter after each force kernel zeroes them again
        fLocal[slot] = make_float4(0.f, 0.f, 0.f, 0.f);
        fNonlocal[slot] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
    const long long numSlots = static_cast<long long>(columnClusterStart[columnCapacity]) * kClusterSize;
    // A whole cluster is in or out (numSlots is a multiple of 8), so the
    // shuffles below run on every lane of a cluster that has slots.
    if (slot >= numSlots) return;  // a skipped build has none: its grids are not read
    const long long numHomeSlots =
        static_cast<long long>(columnClusterStart[state->grids.halo.firstColumn]) * kClusterSize;
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
    if (atom >= 0) slotOfAtom[atom] = static_cast<int>(slot);
    if (slot < numHomeSlots) xqLocal[slot] = xq;

    // The cluster's lanes: a mask of its eight, its first lane.
    const int lane = static_cast<int>(threadIdx.x & 31);
    const int first = lane & ~(kClusterSize - 1);
    const unsigned group = ((1u << kClusterSize) - 1u) << first;
    // Slot 0 of a cluster always holds an atom (columns fill from the start).
    float4 lo = xq, hi = xq;
    for (int a = 1; a < kClusterSize; ++a) {
        const float px = __shfl_sync(group, xq.x, first + a);
        const float py = __shfl_sync(group, xq.y, first + a);
        const float pz = __shfl_sync(group, xq.z, first + a);
        const int atomA = __shfl_sync(group, atom, first + a);
        if (atomA < 0) continue;
        lo = make_float4(minf(lo.x, px), minf(lo.y, py), minf(lo.z, pz), 0.f);
        hi = make_float4(maxf(hi.x, px), maxf(hi.y, py), maxf(hi.z, pz), 0.f);
    }
    if (lane == first) {
        lo.w = hi.w = 0.f;
        bboxLo[cluster] = lo;
        bboxHi[cluster] = hi;
    }
}

// Capacities only grow: a graph of the build stays valid while they hold.
// The first size is taken exactly (one rank: numLocal never changes).
int grown(int capacity, int needed, double growth) {
    if (needed <= capacity) return capacity;
    if (capacity == 0) return std::max(needed, 1);
    return static_cast<int>(static_cast<double>(needed) * growth) + 16;
}

// The sort by columns where it pays (columnSortPays), unless a column was
// too long for it.
bool useColumnSort(const DeviceLayout& layout) { return !layout.columnsTooLong && columnSortPays(layout.atomCapacity); }

// Room for the grids to grow by a row or two between searches.
int columnsWithHeadroom(int needed, double growth) { return needed + static_cast<int>(needed * (growth - 1.0)) + 16; }

void enqueueBoundsAndChoice(DeviceLayout& layout, const Vec3f* dX, const std::uint8_t* dZoneMask, int columnCapacity,
                            cudaStream_t stream) {
    HALOEX_CUDA_CHECK(cudaMemcpyAsync(layout.sizes.data(), layout.sizesHost.data(), sizeof(BuildSizes),
                                      cudaMemcpyHostToDevice, stream));
    enqueueGridChoice(dX, dZoneMask, layout.sizes.data(), layout.boundsPartials.data(), columnCapacity,
                      layout.state.data(), stream);
}

}  // namespace

std::size_t boundsPartialsBytes() { return 2 * kBoundsBlocks * sizeof(BoundsPartial); }

void enqueueGridChoice(const Vec3f* dX, const std::uint8_t* dZoneMask, const BuildSizes* sizes, unsigned char* partials,
                       int columnCapacity, GridState* state, cudaStream_t stream) {
    auto* parts = reinterpret_cast<BoundsPartial*>(partials);
    boundsKernel<<<dim3(kBoundsBlocks, 2), kBoundsThreads, 0, stream>>>(dX, dZoneMask, sizes, parts);
    HALOEX_CUDA_CHECK_LAUNCH();
    gridChoiceKernel<<<1, kBoundsThreads, 0, stream>>>(parts, columnCapacity, state);
    HALOEX_CUDA_CHECK_LAUNCH();
}

void reserveLayout(DeviceLayout& layout, int numHome, int numLocal, double growth) {
    layout.numHome = numHome;
    layout.numLocal = numLocal;
    layout.numHomeClusters = layout.numClusters = -1;  // set by acceptLayout
    layout.sizesHost.reserve(1);
    layout.sizesHost[0] = BuildSizes{numHome, numLocal};
    layout.sizes.resize(1);
    layout.state.resize(1);
    layout.stateHost.reserve(1);
    layout.boundsPartials.resize(boundsPartialsBytes());
    layout.atomCapacity = grown(layout.atomCapacity, numLocal, growth);
    layout.columnSort = useColumnSort(layout);
    layout.homeCapacity = grown(layout.homeCapacity, numHome, growth);
    const int columns = std::max(layout.columnCapacity, 2);  // probeColumns sets it before the first build
    // The keys' bits (sortKey): a column number below 2^bitsFor(columns), at most 24 of z.
    layout.sortEndBit = std::min(32, bitsFor(columns) + 24);
    // ceil(count / 8) <= (count + 7) / 8 per column, over at most `columns` columns.
    layout.maxHomeClusters =
        static_cast<int>((static_cast<long long>(layout.homeCapacity) + (kClusterSize - 1LL) * columns) / kClusterSize);
    layout.maxClusters =
        static_cast<int>((static_cast<long long>(layout.atomCapacity) + (kClusterSize - 1LL) * columns) / kClusterSize);

    const auto atoms = static_cast<std::size_t>(layout.atomCapacity);
    reserveWithHeadroom(layout.keys, atoms, growth);
    reserveWithHeadroom(layout.keysSorted, atoms, growth);
    reserveWithHeadroom(layout.atoms, atoms, growth);
    reserveWithHeadroom(layout.atomsSorted, atoms, growth);
    reserveWithHeadroom(layout.columnCount, columns + 1, growth);
    reserveWithHeadroom(layout.columnAtomStart, columns + 1, growth);
    reserveWithHeadroom(layout.columnClusterStart, columns + 1, growth);
    reserveWithHeadroom(layout.columnFill, columns + 1, growth);
    reserveWithHeadroom(layout.bucket, atoms, growth);
    std::size_t sortBytes = 0;
    HALOEX_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sortBytes, layout.keys.data(), layout.keysSorted.data(),
                                                      layout.atoms.data(), layout.atomsSorted.data(),
                                                      layout.atomCapacity, 0, layout.sortEndBit));
    const std::size_t scanBytes = scanCountsAndGroupsBytes(columns + 1);
    reserveWithHeadroom(layout.cubTemp, std::max({sortBytes, scanBytes, std::size_t{1}}), growth);

    const auto slots = static_cast<std::size_t>(std::max<long long>(layout.maxSlots(), kClusterSize));
    const auto clusters = static_cast<std::size_t>(std::max(layout.maxClusters, 1));
    reserveWithHeadroom(layout.clusterColumn, clusters, growth);
    reserveWithHeadroom(layout.atomOfSlot, slots, growth);
    reserveWithHeadroom(layout.zoneOfSlot, slots, growth);
    reserveWithHeadroom(layout.chargeOfSlot, slots, growth);
    reserveWithHeadroom(layout.slotOfAtom, static_cast<std::size_t>(std::max(layout.atomCapacity, 1)), growth);
    reserveWithHeadroom(layout.xqLocal, slots, growth);
    reserveWithHeadroom(layout.xqNonlocal, slots, growth);
    reserveWithHeadroom(layout.fLocal, slots, growth);
    reserveWithHeadroom(layout.fNonlocal, slots, growth);
    reserveWithHeadroom(layout.bboxLo, clusters, growth);
    reserveWithHeadroom(layout.bboxHi, clusters, growth);
}

void enqueueLayout(DeviceLayout& layout, const Vec3f* dX, const float* dCharge, const std::uint8_t* dZoneMask,
                   float sqrtCoulomb, cudaStream_t stream, BuildMarks* marks) {
    const int columns = std::max(layout.columnCapacity, 2);
    // 1. Bounds of the home and halo atoms, and the grids they give.
    enqueueBoundsAndChoice(layout, dX, dZoneMask, columns, stream);
    mark(marks, "bounds and grid choice", stream);
    // 2. Column keys and counts over the atom capacity.
    layout.columnCount.zeroAsync(stream);  // the scan reads trailing zeros past the grids' columns
    keysKernel<<<blocksFor(layout.atomCapacity, kThreads), kThreads, 0, stream>>>(
        dX, dZoneMask, layout.sizes.data(), layout.state.data(), layout.atomCapacity, layout.keys.data(),
        layout.atoms.data(), layout.columnCount.data());
    HALOEX_CUDA_CHECK_LAUNCH();
    mark(marks, "keys", stream);
    // 3. The sort by (column, z, atom index), and where each column's atoms
    // and clusters start.
    const auto scanColumns = [&] {
        scanCountsAndGroups(layout.columnCount.data(), columns + 1, kClusterSize, layout.columnAtomStart.data(),
                            layout.columnClusterStart.data(), layout.cubTemp, stream);
    };
    if (layout.columnSort) {
        scanColumns();
        layout.columnFill.zeroAsync(stream);
        bucketKernel<<<blocksFor(layout.atomCapacity, kThreads), kThreads, 0, stream>>>(
            layout.keys.data(), layout.atomCapacity, layout.state.data(), layout.columnAtomStart.data(),
            layout.columnFill.data(), layout.bucket.data());
        HALOEX_CUDA_CHECK_LAUNCH();
        columnSortKernel<<<columns, kColumnSortThreads, 0, stream>>>(layout.columnAtomStart.data(),
                                                                     layout.bucket.data(), layout.state.data(),
                                                                     layout.atomsSorted.data());
        HALOEX_CUDA_CHECK_LAUNCH();
    } else {
        // Keys of padding atoms are all ones in every bit the sort looks at,
        // so they still sort last (no real key is all ones: chooseGrids).
        std::size_t bytes = layout.cubTemp.size();
        HALOEX_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(layout.cubTemp.data(), bytes, layout.keys.data(),
                                                          layout.keysSorted.data(), layout.atoms.data(),
                                                          layout.atomsSorted.data(), layout.atomCapacity, 0,
                                                          layout.sortEndBit, stream));
        scanColumns();
    }
    mark(marks, "sort", stream);
    clusterColumnKernel<<<blocksFor(columns, kThreads), kThreads, 0, stream>>>(layout.columnClusterStart.data(),
                                                                               columns, layout.state.data(),
                                                                               layout.clusterColumn.data());
    HALOEX_CUDA_CHECK_LAUNCH();
    mark(marks, "column scan", stream);
    // 4. Slots: atom, zone, charge and position of every cluster position,
    // and each atom's slot (-1 first: padding atoms have none).
    HALOEX_CUDA_CHECK(cudaMemsetAsync(layout.slotOfAtom.data(), 0xff, layout.slotOfAtom.size() * sizeof(int), stream));
    fillSlotsKernel<<<blocksFor(layout.maxSlots(), kThreads), kThreads, 0, stream>>>(
        dX, dCharge, dZoneMask, layout.atomsSorted.data(), layout.columnAtomStart.data(),
        layout.columnClusterStart.data(), layout.clusterColumn.data(), layout.state.data(), columns, layout.maxSlots(),
        sqrtCoulomb, layout.atomOfSlot.data(), layout.zoneOfSlot.data(), layout.chargeOfSlot.data(),
        layout.slotOfAtom.data(), layout.xqLocal.data(), layout.xqNonlocal.data(), layout.fLocal.data(),
        layout.fNonlocal.data(), layout.bboxLo.data(), layout.bboxHi.data());
    HALOEX_CUDA_CHECK_LAUNCH();
    mark(marks, "slots and boxes", stream);
    HALOEX_CUDA_CHECK(cudaMemcpyAsync(layout.stateHost.data(), layout.state.data(), sizeof(GridState),
                                      cudaMemcpyDeviceToHost, stream));
}

void probeColumns(DeviceLayout& layout, const Vec3f* dX, const std::uint8_t* dZoneMask, double growth,
                  cudaStream_t stream) {
    enqueueBoundsAndChoice(layout, dX, dZoneMask, INT_MAX, stream);
    HALOEX_CUDA_CHECK(cudaMemcpyAsync(layout.stateHost.data(), layout.state.data(), sizeof(GridState),
                                      cudaMemcpyDeviceToHost, stream));
    HALOEX_CUDA_CHECK(cudaStreamSynchronize(stream));
    const GridState& s = layout.stateHost[0];
    if (s.firstNonFinite != INT_MAX) throwNonFiniteAtom(s.firstNonFinite, layout.numHome);
    layout.columnCapacity = std::max(layout.columnCapacity, columnsWithHeadroom(s.grids.numColumns(), growth));
}

bool acceptLayout(DeviceLayout& layout, double growth) {
    const GridState& s = layout.stateHost[0];
    if (s.firstNonFinite != INT_MAX) throwNonFiniteAtom(s.firstNonFinite, layout.numHome);
    if (s.skipped != 0) {
        layout.columnCapacity = columnsWithHeadroom(s.grids.numColumns(), growth);
        return false;
    }
    if (s.columnTooLong != 0) {  // from now on the global sort: this system has columns too long for a block
        layout.columnsTooLong = true;
        return false;
    }
    layout.grids = s.grids;
    layout.numHomeAtoms = s.numHomeAtoms;
    layout.numHaloAtoms = s.numHaloAtoms;
    layout.numHomeClusters = s.numHomeClusters;
    layout.numClusters = s.numClusters;
    return true;
}

BuildMarks::~BuildMarks() {
    for (auto& [part, event] : events_) cudaEventDestroy(event);
}

void BuildMarks::start(cudaStream_t stream) {
    used_ = 0;
    mark("start", stream);
}

void BuildMarks::mark(const char* part, cudaStream_t stream) {
    if (used_ == events_.size()) {
        cudaEvent_t event = nullptr;
        HALOEX_CUDA_CHECK(cudaEventCreate(&event));
        events_.emplace_back(part, event);
    }
    events_[used_].first = part;
    HALOEX_CUDA_CHECK(cudaEventRecord(events_[used_].second, stream));
    ++used_;
}

std::string BuildMarks::report() const {
    std::string text;
    float total = 0.f;
    for (std::size_t k = 1; k < used_; ++k) {
        float ms = 0.f;
        HALOEX_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[k - 1].second, events_[k].second));
        total += ms;
        text += std::string(k > 1 ? ", " : "") + events_[k].first + " " + std::to_string(1e3f * ms);
    }
    return text + "; total " + std::to_string(1e3f * total) + " us";
}

}  // namespace haloex::md::gpu::detail
