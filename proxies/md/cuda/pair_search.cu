// Cluster-pair search on the GPU, equal to searchReference()
// (cluster_reference.cpp) element by element. One pass: a warp walks the
// neighbourhood of an i cluster (searchKernel) and keeps its pairs in a
// fixed-size scratch slot; one scan of the counts gives every i cluster the
// place of its pairs and of its entries, and the compaction writes the dense
// list there. A slot that overflowed makes the build run the fill pass
// instead (searchKernel<kFill>: one warp per i cluster, writing in place).
//
// The walk is flat (walkCandidates): lanes cut 32 columns to z windows at
// once, then test 32 candidate j clusters at once (half-list rule and
// bounding-box distance). Each surviving candidate is then examined by the
// whole warp, lane = 8 t + b taking atom pairs (t, b) and (t + 4, b): the
// ballots of those bits are exactly the 64-bit interaction mask.
#include <algorithm>
#include <cstdlib>

#include "count_scan.cuh"
#include "nonbonded_internal.cuh"

namespace haloex::md::gpu::detail {
namespace {

constexpr int kSearchThreads = 128;

struct SearchParams {
    const GridState* state;  // the grids, chosen on the device (grid_build.cu)
    Float3 boxLengths;
    int periodic[3];
    float rlist2;
    float radius;
    // The cluster counts, read by the kernels from columnClusterStart (the
    // host learns them only from the search's totals): at the home columns
    // and at the capacity, where the trailing empty columns leave the total.
    // Tasks are the home clusters (local list) or all clusters (non-local).
    int columnCapacity;
    int nonlocal;
    int maxJ;
    int scratchCapacity;  // kOnePass: pairs each i cluster may keep in the scratch
    float rlistInner2;    // kOnePass with pruning (> 0): flag the pairs the inner list keeps
};

// Slack of the exact pre-filters below, in nm: an atom's column comes from
// rounded float arithmetic and the z sort from rounded offsets, so a column's
// atoms may stick out of its cell, and z order may invert, by far less than
// this. With it the filters never drop a pair the bounding-box test keeps,
// and the list stays identical to the reference's.
constexpr float kFilterSlack = 1.0e-3f;

// The j grid of a list as the kernels use it, loaded once per block into
// shared memory (it is device data: the host never saw it).
struct JGrid {
    ColumnGrid g;
    float cellX, cellY;  // the column widths (0 for a one-column dimension)
    float zSlack;        // kFilterSlack and two z quanta of the sort key
    int homeColumns;     // the halo grid's first column
};

__device__ inline void loadJGrid(const SearchParams& p, JGrid& out) {
    if (threadIdx.x == 0) {
        const GridChoice& grids = p.state->grids;
        out.g = p.nonlocal ? grids.halo : grids.home;
        out.cellX = out.g.invCellX > 0.f ? 1.f / out.g.invCellX : 0.f;
        out.cellY = out.g.invCellY > 0.f ? 1.f / out.g.invCellY : 0.f;
        // Atoms sort by z only to a quantum of the key (sortKey): a later
        // cluster of a column may start that much lower than an earlier one.
        out.zSlack = out.g.zScale > 0.f ? kFilterSlack + 2.f / out.g.zScale : INFINITY;
        // A skipped build (grids past the capacity) has no cluster: read none.
        out.homeColumns = p.state->skipped != 0 ? 0 : grids.halo.firstColumn;
    }
    __syncthreads();
}

// Squared x-y distance from the i box to column (cx, cy) of the j grid moved
// by `shift`, the column's cell widened by kFilterSlack (edge columns open
// outwards: atoms beyond the grid are clamped into them). A lower bound of
// boxDistance2 for every cluster of the column, so a column at or beyond
// rlist cannot hold a candidate: the corners of the square of columns the
// search visits.
__device__ inline float columnDistance2(ColumnGrid g, float cellX, float cellY, int cx, int cy, Float3 iLo, Float3 iHi,
                                        Float3 shift) {
    const auto axis = [](int c, int n, float origin, float width, float s, float lo, float hi) {
        const float cellLo = c == 0 ? -INFINITY : origin + c * width + s - kFilterSlack;
        const float cellHi = c == n - 1 ? INFINITY : origin + (c + 1) * width + s + kFilterSlack;
        return fmaxf(0.f, fmaxf(cellLo - hi, lo - cellHi));
    };
    const float dx = axis(cx, g.nx, g.x0, cellX, shift.x, iLo.x, iHi.x);
    const float dy = axis(cy, g.ny, g.y0, cellY, shift.y, iLo.y, iHi.y);
    return dx * dx + dy * dy;
}

// kOnePass with pruning: a scratch record whose cluster pair has an in-list
// atom pair closer than rlistInner carries this bit in its shift field (shift
// indices are < 27); the compaction strips it and builds the inner list from
// it -- the search step's full prune without a second pass over the list.
constexpr int kInnerFlag = 1 << 8;

__device__ inline Float3 xyz(float4 v) { return {v.x, v.y, v.z}; }

// The candidate j clusters of i cluster box [iLo, iHi] for shift s (vector
// sv), in the reference's order -- columns by rows (y, then x), clusters of
// a column upwards -- each passed to visit(cj) by the whole warp. The walk is
// flat: lane q takes column q of a batch of 32 and cuts its clusters to a z
// window (a binary search each way on the clusters' lower z, which never
// decreases up a column but for j.zSlack), a warp scan of the windows'
// lengths lays them end to end, and the warp tests 32 of them at a time
// against the i box (half-list rule and bounding-box distance). So a column
// costs a lane, not a pass of the warp, and the clusters far below or above
// the i box are never loaded.
__device__ inline bool clustersAboveFrom(float lowerZ, float zShift, float zSlack, float iHiZ, float rlist2) {
    // Every cluster from this one up starts beyond rlist above the i box.
    const float above = lowerZ + zShift - zSlack - iHiZ;
    return above > 0.f && above * above >= rlist2;
}
__device__ inline bool clustersBelowUpTo(float lowerZ, float zShift, float zSlack, float iLoZ, float rlist2) {
    // Every cluster before this one ends beyond rlist below the i box: their
    // upper z is at most this one's lower z and j.zSlack (the sort's order).
    const float below = iLoZ - (lowerZ + zShift + zSlack);
    return below > 0.f && below * below >= rlist2;
}

template <class Visit>
__device__ inline void walkCandidates(const JGrid& j, const SearchParams& p, const int* __restrict__ columnClusterStart,
                                      const float4* __restrict__ bboxLo, const float4* __restrict__ bboxHi, int firstI,
                                      int numI, bool sameGrid, Float3 iLo, Float3 iHi, int s, Float3 sv, int lane,
                                      Visit&& visit) {
    const ColumnGrid& g = j.g;
    const IndexRange rx =
        cellRange(regionLo(iLo.x, sv.x, p.radius), regionHi(iHi.x, sv.x, p.radius), g.x0, g.invCellX, g.nx);
    const IndexRange ry =
        cellRange(regionLo(iLo.y, sv.y, p.radius), regionHi(iHi.y, sv.y, p.radius), g.y0, g.invCellY, g.ny);
    if (rx.lo > rx.hi || ry.lo > ry.hi) return;
    const int rowLength = rx.hi - rx.lo + 1;
    const int numColumns = rowLength * (ry.hi - ry.lo + 1);
    for (int q0 = 0; q0 < numColumns; q0 += 32) {
        // This lane's column and its z window [begin, begin + length).
        int begin = 0, length = 0;
        const int q = q0 + lane;
        if (q < numColumns) {
            const int cy = ry.lo + q / rowLength;
            const int cx = rx.lo + q % rowLength;
            if (columnDistance2(g, j.cellX, j.cellY, cx, cy, iLo, iHi, sv) < p.rlist2) {
                const int column = g.firstColumn + cx + g.nx * cy;
                int lo = columnClusterStart[column];
                int hi = columnClusterStart[column + 1];
                // A cluster from which all lie above (or hi): the search keeps
                // b = hi or b such that clustersAboveFrom(b).
                int a = lo, b = hi;
                while (a < b) {
                    const int m = (a + b) >> 1;
                    if (clustersAboveFrom(bboxLo[m].z, sv.z, j.zSlack, iHi.z, p.rlist2)) b = m;
                    else a = m + 1;
                }
                hi = b;
                // A cluster before which all lie below (or lo): a = lo or
                // clustersBelowUpTo(a).
                a = lo;
                while (b - a > 1) {
                    const int m = (a + b) >> 1;
                    if (clustersBelowUpTo(bboxLo[m].z, sv.z, j.zSlack, iLo.z, p.rlist2)) a = m;
                    else b = m;
                }
                begin = a;
                length = hi - a;
            }
        }
        int end = length;  // inclusive scan of the lengths over the lanes
        for (int offset = 1; offset < 32; offset <<= 1) {
            const int v = __shfl_up_sync(kFullWarp, end, offset);
            if (lane >= offset) end += v;
        }
        const int total = __shfl_sync(kFullWarp, end, 31);
        const int start = end - length;
        for (int f0 = 0; f0 < total; f0 += 32) {
            const int f = f0 + lane;
            // The window holding flat index f: the first lane whose end exceeds it.
            int owner = 0;
            for (int step = 16; step > 0; step >>= 1) {
                if (__shfl_sync(kFullWarp, end, owner + step - 1) <= f) owner += step;
            }
            owner = min(owner, 31);
            const int cj = __shfl_sync(kFullWarp, begin, owner) + f - __shfl_sync(kFullWarp, start, owner);
            bool pass = false;
            if (f < total && clusterGroupInHalfList(firstI, numI, cj, s, sameGrid)) {
                pass = boxDistance2(iLo, iHi, xyz(bboxLo[cj]), xyz(bboxHi[cj]), sv) < p.rlist2;
            }
            unsigned candidates = __ballot_sync(kFullWarp, pass);
            while (candidates != 0) {
                const int source = __ffs(candidates) - 1;
                candidates &= candidates - 1;
                visit(__shfl_sync(kFullWarp, cj, source));
            }
        }
    }
}

// One warp per i cluster. kOnePass: counts, and the pairs into a fixed-size
// scratch slot per i cluster (compacted afterwards), so the search runs
// once; kFill: the pairs at the places the scan of the counts gave, for a
// build whose one-pass search overflowed a slot (counters[2] holds the
// largest count), and a check that both walks counted alike.
enum SearchMode : int { kFill = 1, kOnePass = 2 };

template <int kMode>
__global__ void __launch_bounds__(kSearchThreads)
    searchKernel(SearchParams p, const int* __restrict__ columnClusterStart, const float4* __restrict__ bboxLo,
                 const float4* __restrict__ bboxHi, const float4* __restrict__ xq,
                 const std::uint8_t* __restrict__ zoneOfSlot, int* __restrict__ pairCount,
                 const int* __restrict__ pairOffset, const int* __restrict__ entryOffset,
                 ClusterPair* __restrict__ pairs, ClusterEntry* __restrict__ entries,
                 unsigned long long* __restrict__ counters, ClusterPair* __restrict__ scratch) {
    constexpr bool kFillPass = kMode == kFill;
    // ColumnGrid's default member initialisers make JGrid's construction
    // dynamic, which nvcc does not run for __shared__ (warning 20054);
    // loadJGrid assigns every field before the barrier, so none is needed.
#pragma nv_diag_suppress 20054
    __shared__ JGrid j;
#pragma nv_diag_default 20054
    loadJGrid(p, j);
    const int ci = static_cast<int>((static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32);
    const int numHomeClusters = columnClusterStart[j.homeColumns];
    if (ci >= (p.nonlocal ? columnClusterStart[p.columnCapacity] : numHomeClusters)) return;  // uniform per warp
    const int lane = threadIdx.x & 31;
    const int ti = lane >> 3;  // i slots ti and ti + 4
    const int tj = lane & 7;   // j slot
    const bool sameGrid = !p.nonlocal || ci >= numHomeClusters;
    const Float3 iLo = xyz(bboxLo[ci]);
    const Float3 iHi = xyz(bboxHi[ci]);
    const Float3 xi0 = xyz(xq[ci * kClusterSize + ti]);
    const Float3 xi1 = xyz(xq[ci * kClusterSize + ti + 4]);
    const std::uint8_t zi0 = zoneOfSlot[ci * kClusterSize + ti];
    const std::uint8_t zi1 = zoneOfSlot[ci * kClusterSize + ti + 4];
    const int base = kFillPass ? pairOffset[ci] : 0;
    const int limit = kFillPass ? pairCount[ci] : 0;
    ClusterPair* const slot = kMode == kOnePass ? scratch + static_cast<long long>(ci) * p.scratchCapacity : nullptr;
    int count = 0;
    unsigned long long atomPairs = 0;

    for (int s = 0; s < kNumShifts; ++s) {
        if (!shiftAllowed(s, p.periodic[0] != 0, p.periodic[1] != 0, p.periodic[2] != 0)) continue;
        const Float3 sv = shiftVector(s, p.boxLengths);
        if (!zShiftReachesGrid(j.g, iLo.z, iHi.z, sv.z, p.radius)) continue;
        // Whole warp: the atom pairs of candidate cj, and the pair if one is within rlist.
        const auto examine = [&](int cj) {
            const Float3 xj = xyz(xq[cj * kClusterSize + tj]);
            const std::uint8_t zj = zoneOfSlot[cj * kClusterSize + tj];
            const bool self = cj == ci;
            const bool in0 = atomPairInList(zi0, zj, ti, tj, self, s);
            const bool in1 = atomPairInList(zi1, zj, ti + 4, tj, self, s);
            const float d0 = atomDistance2(xi0, xj, sv);
            const float d1 = atomDistance2(xi1, xj, sv);
            const bool near = (in0 && d0 < p.rlist2) || (in1 && d1 < p.rlist2);
            const unsigned maskLo = __ballot_sync(kFullWarp, in0);
            const unsigned maskHi = __ballot_sync(kFullWarp, in1);
            if (!__any_sync(kFullWarp, near)) return;
            if constexpr (kFillPass) {
                if (lane == 0 && count < limit) pairs[base + count] = ClusterPair{cj, s, maskLo, maskHi};
            }
            if constexpr (kMode == kOnePass) {
                // The prune kernel's decision, from the same distances (never
                // true without pruning: rlistInner2 is 0 then).
                const bool inner = __any_sync(kFullWarp, (in0 && d0 < p.rlistInner2) || (in1 && d1 < p.rlistInner2));
                if (lane == 0 && count < p.scratchCapacity) {
                    slot[count] = ClusterPair{cj, inner ? s | kInnerFlag : s, maskLo, maskHi};
                }
            }
            atomPairs += __popc(maskLo) + __popc(maskHi);
            ++count;
        };
        walkCandidates(j, p, columnClusterStart, bboxLo, bboxHi, ci, 1, sameGrid, iLo, iHi, s, sv, lane, examine);
    }

    if constexpr (!kFillPass) {
        if (lane == 0) {
            pairCount[ci] = count;  // the scan derives the entry counts from it
            atomicAdd(&counters[0], atomPairs);
            atomicMax(&counters[2], static_cast<unsigned long long>(count));
        }
    } else {
        const int numEntries = (count + p.maxJ - 1) / p.maxJ;
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

// The compaction sized on the device, in the build's graph before the host
// knows any total: the tasks from the GridState, the totals from the scan,
// and a compaction only if no slot overflowed and the list fits the arrays
// as they are (counters[kCompacted] then says so, and block 0 resets the
// rolling prune's part counter); otherwise nothing, and the host compacts
// after its read (finishSearchCounts).
constexpr int kCompacted = 3;  // DeviceList::counters: 1 once the device compacted the list
struct DeviceSizes {
    const GridState* state = nullptr;  // null: sized by the host (numTasks)
    int nonlocal = 0;
    int taskCapacity = 0;  // the scan's totals sit at this index
    long long pairCapacity = 0;
    long long entryCapacity = 0;
    int* pruneState = nullptr;  // with pruning
    int pruneParts = 0;
};

// One warp per i cluster: its pairs from the scratch slot to their place in
// the dense list, and its entries (as the fill pass writes them). With
// `innerEntries` (pruning), also the inner list as the prune kernel writes
// it: per entry, the flagged records in their outer order, then the entry
// with jEnd = jBegin + kept. An entry holds at most kMaxJClustersPerEntry
// pairs, taken 32 at a time (one ballot each).
__global__ void compactKernel(int numTasks, DeviceSizes sized, int scratchCapacity, int maxJ,
                              const ClusterPair* __restrict__ scratch, const int* __restrict__ pairCount,
                              const int* __restrict__ pairOffset, const int* __restrict__ entryOffset,
                              ClusterPair* __restrict__ pairs, ClusterEntry* __restrict__ entries,
                              ClusterPair* __restrict__ innerPairs, ClusterEntry* __restrict__ innerEntries,
                              unsigned long long* __restrict__ counters) {
    if (sized.state != nullptr) {
        numTasks = sized.nonlocal ? sized.state->numClusters : sized.state->numHomeClusters;
        const int numPairs = pairOffset[sized.taskCapacity];
        const int numEntries = entryOffset[sized.taskCapacity];
        if (counters[2] > static_cast<unsigned long long>(scratchCapacity) || numPairs > sized.pairCapacity ||
            numEntries > sized.entryCapacity) {
            return;  // uniform: the host compacts after its read
        }
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            counters[kCompacted] = 1;
            if (sized.pruneState != nullptr) {  // part 0 first (advanced by the scatter after each force kernel)
                sized.pruneState[0] = prunePartBegin(numEntries, sized.pruneParts, 0);
                sized.pruneState[1] = prunePartBegin(numEntries, sized.pruneParts, 1);
                sized.pruneState[2] = 0;
            }
        }
    }
    const int ci = static_cast<int>((static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32);
    if (ci >= numTasks) return;
    const int lane = threadIdx.x & 31;
    const int count = pairCount[ci];
    const int base = pairOffset[ci];
    const ClusterPair* slot = scratch + static_cast<long long>(ci) * scratchCapacity;
    const int numEntries = (count + maxJ - 1) / maxJ;
    const int first = entryOffset[ci];
    if (innerEntries == nullptr) {
        for (int k = lane; k < count; k += 32) pairs[base + k] = slot[k];
        for (int e = lane; e < numEntries; e += 32) {
            entries[first + e] = ClusterEntry{ci, base + e * maxJ, base + min(count, (e + 1) * maxJ), 0};
        }
        return;
    }
    for (int e = 0; e < numEntries; ++e) {
        const int jBegin = e * maxJ;
        const int numJ = min(count, jBegin + maxJ) - jBegin;
        int kept = 0;  // the entry's inner records so far, in their order
        for (int chunk = 0; chunk < numJ; chunk += 32) {
            const int n = min(32, numJ - chunk);
            ClusterPair record{0, 0, 0u, 0u};
            if (lane < n) record = slot[jBegin + chunk + lane];
            const bool inner = lane < n && (record.shift & kInnerFlag) != 0;
            record.shift &= ~kInnerFlag;
            const unsigned keep = __ballot_sync(kFullWarp, inner);
            if (lane < n) pairs[base + jBegin + chunk + lane] = record;
            if (inner) innerPairs[base + jBegin + kept + __popc(keep & ((1u << lane) - 1u))] = record;
            kept += __popc(keep);
        }
        if (lane == 0) {
            const ClusterEntry entry{ci, base + jBegin, base + jBegin + numJ, 0};
            entries[first + e] = entry;
            innerEntries[first + e] = ClusterEntry{ci, entry.jBegin, entry.jBegin + kept, 0};
        }
    }
}

// Sizes of the non-local home clusters' collection read on the device (in
// the build's graph), or null (sized by the host).
struct FlagSizes {
    const GridState* state = nullptr;
    const int* numEntries = nullptr;                // the non-local scan's entry total
    const unsigned long long* compacted = nullptr;  // the non-local list's counters[kCompacted]
};

// One warp per entry of the non-local list: flags the home clusters it names.
__global__ void flagNonlocalHomeClusters(const ClusterEntry* __restrict__ entries, int numEntries, FlagSizes sized,
                                         const ClusterPair* __restrict__ pairs, int numHomeClusters,
                                         int* __restrict__ flag) {
    if (sized.state != nullptr) {
        if (*sized.compacted == 0) return;  // no list yet: the host collects after its read
        numEntries = *sized.numEntries;
        numHomeClusters = sized.state->numHomeClusters;
    }
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

__global__ void compactFlagged(const int* __restrict__ flag, int n, FlagSizes sized, int* __restrict__ out,
                               int* __restrict__ count) {
    if (sized.state != nullptr) {
        if (*sized.compacted == 0) return;
        n = sized.state->numHomeClusters;
    }
    const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (c < n && flag[c] != 0) out[atomicAdd(count, 1)] = c;
}

}  // namespace

void collectNonlocalHomeClusters(DeviceLayout& layout, const DeviceList& nonlocalList, double growth,
                                 cudaStream_t stream) {
    layout.numNonlocalHomeClusters = 0;
    layout.flaggedCountPending = false;
    const int numHome = layout.numHomeClusters;
    if (nonlocalList.numEntries == 0 || numHome == 0) return;
    reserveWithHeadroom(layout.clusterFlag, static_cast<std::size_t>(numHome), growth);
    reserveWithHeadroom(layout.nonlocalHomeClusters, static_cast<std::size_t>(numHome), growth);
    reserveWithHeadroom(layout.flaggedCount, 1, growth);
    layout.clusterFlag.zeroAsync(stream);
    layout.flaggedCount.zeroAsync(stream);
    flagNonlocalHomeClusters<<<blocksFor(static_cast<long long>(nonlocalList.numEntries) * 32, kSearchThreads),
                               kSearchThreads, 0, stream>>>(nonlocalList.entries.data(), nonlocalList.numEntries,
                                                            FlagSizes{}, nonlocalList.pairs.data(), numHome,
                                                            layout.clusterFlag.data());
    HALOEX_CUDA_CHECK_LAUNCH();
    compactFlagged<<<blocksFor(numHome, kSearchThreads), kSearchThreads, 0, stream>>>(
        layout.clusterFlag.data(), numHome, FlagSizes{}, layout.nonlocalHomeClusters.data(),
        layout.flaggedCount.data());
    HALOEX_CUDA_CHECK_LAUNCH();
    // Read after the build's own synchronisation (finishNonlocalHomeClusters).
    layout.flaggedCountHost.reserve(1);
    HALOEX_CUDA_CHECK(cudaMemcpyAsync(layout.flaggedCountHost.data(), layout.flaggedCount.data(), sizeof(int),
                                      cudaMemcpyDeviceToHost, stream));
    layout.flaggedCountPending = true;
}

void finishNonlocalHomeClusters(DeviceLayout& layout) {
    if (!layout.flaggedCountPending) return;
    layout.flaggedCountPending = false;
    layout.numNonlocalHomeClusters = layout.flaggedCountHost[0];
}

cudaFuncAttributes searchKernelAttributes() {
    cudaFuncAttributes a{};
    HALOEX_CUDA_CHECK(cudaFuncGetAttributes(&a, searchKernel<kOnePass>));
    return a;
}

namespace {

// Tasks of a list: the most i clusters it can have (home or all clusters).
int taskCapacity(const DeviceLayout& layout, int k) { return k == 1 ? layout.maxClusters : layout.maxHomeClusters; }

SearchParams paramsOf(const DeviceList& list, const DeviceLayout& layout, const SearchSettings& settings,
                      const SearchPrune& prune, int k) {
    SearchParams p{};
    p.state = layout.state.data();
    p.boxLengths = boxLengthsF(settings.box);
    for (int d = 0; d < 3; ++d) p.periodic[d] = settings.periodic[d] ? 1 : 0;
    p.rlist2 = rlistSquared(settings.rlist);
    p.radius = columnSearchRadius(settings.rlist);
    p.columnCapacity = std::max(layout.columnCapacity, 2);
    p.nonlocal = k == 1 ? 1 : 0;
    p.maxJ = settings.maxJClustersPerEntry;
    p.scratchCapacity = list.scratchCapacity;
    p.rlistInner2 = prune.parts > 0 ? prune.rlistInner2 : 0.f;
    return p;
}

}  // namespace

void reserveSearch(DeviceList (&lists)[2], DeviceLayout& layout, const SearchPrune& prune, double growth) {
    lists[0].totalsHost.reserve(4);
    for (int k = 0; k < 2; ++k) {
        DeviceList& list = lists[k];
        // Home clusters exist exactly when home atoms do; the non-local list
        // is searched whenever there are halo atoms (padding or not: without
        // a non-padding one its j grid has no cluster and it stays empty).
        list.counted = k == 1 ? layout.numLocal > layout.numHome : layout.numHome > 0;
        if (!list.counted) continue;
        const int numTasks = taskCapacity(layout, k);
        reserveWithHeadroom(list.pairCount, numTasks + 1, growth);
        reserveWithHeadroom(list.pairOffset, numTasks + 1, growth);
        reserveWithHeadroom(list.entryOffset, numTasks + 1, growth);
        reserveWithHeadroom(list.counters, 4, growth);
        reserveWithHeadroom(list.scratch, static_cast<std::size_t>(numTasks) * list.scratchCapacity, growth);
        reserveWithHeadroom(list.cubTemp, std::max<std::size_t>(scanCountsAndGroupsBytes(numTasks + 1), 1), growth);
        list.countersHost.reserve(4);
        if (prune.parts > 0) list.pruneState.resize(3);
    }
    // The non-local home clusters' collection, sized for every home cluster.
    if (lists[1].counted) {
        const auto homeClusters = static_cast<std::size_t>(std::max(layout.maxHomeClusters, 1));
        reserveWithHeadroom(layout.clusterFlag, homeClusters, growth);
        reserveWithHeadroom(layout.nonlocalHomeClusters, homeClusters, growth);
        reserveWithHeadroom(layout.flaggedCount, 1, growth);
        layout.flaggedCountHost.reserve(1);
    }
}

void enqueueSearchCounts(DeviceList (&lists)[2], DeviceLayout& layout, const SearchSettings& settings,
                         const SearchPrune& prune, cudaStream_t stream, BuildMarks* marks) {
    int* totals = lists[0].totalsHost.data();
    for (int k = 0; k < 2; ++k) {
        DeviceList& list = lists[k];
        if (!list.counted) continue;
        const int numTasks = taskCapacity(layout, k);
        list.pairCount.zeroAsync(stream);  // the scans read trailing zeros past the real tasks
        list.counters.zeroAsync(stream);
        const SearchParams p = paramsOf(list, layout, settings, prune, k);
        searchKernel<kOnePass>
            <<<blocksFor(static_cast<long long>(numTasks) * 32, kSearchThreads), kSearchThreads, 0, stream>>>(
                p, layout.columnClusterStart.data(), layout.bboxLo.data(), layout.bboxHi.data(),
                layout.xqNonlocal.data(), layout.zoneOfSlot.data(), list.pairCount.data(), nullptr, nullptr, nullptr,
                nullptr, list.counters.data(), list.scratch.data());
        HALOEX_CUDA_CHECK_LAUNCH();
        mark(marks, k == 1 ? "non-local search" : "local search", stream);
        // Where each i cluster's pairs and entries start, in one scan.
        scanCountsAndGroups(list.pairCount.data(), numTasks + 1, p.maxJ, list.pairOffset.data(),
                            list.entryOffset.data(), list.cubTemp, stream);
        mark(marks, k == 1 ? "non-local scan" : "local scan", stream);
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(&totals[2 * k], list.pairOffset.data() + numTasks, sizeof(int),
                                          cudaMemcpyDeviceToHost, stream));
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(&totals[2 * k + 1], list.entryOffset.data() + numTasks, sizeof(int),
                                          cudaMemcpyDeviceToHost, stream));
    }
    // The compactions sized on the device (DeviceSizes), into the lists'
    // arrays as they are, then the non-local home clusters; the counters
    // (with kCompacted) and the collection's count go to the host with the
    // totals.
    for (int k = 0; k < 2; ++k) {
        DeviceList& list = lists[k];
        if (!list.counted) continue;
        const int numTasks = taskCapacity(layout, k);
        const bool pruned = prune.parts > 0;
        DeviceSizes sized;
        sized.state = layout.state.data();
        sized.nonlocal = k;
        sized.taskCapacity = numTasks;
        sized.pairCapacity = static_cast<long long>(pruned ? std::min(list.pairs.capacity(), list.innerPairs.capacity())
                                                           : list.pairs.capacity());
        sized.entryCapacity = static_cast<long long>(
            pruned ? std::min(list.entries.capacity(), list.innerEntries.capacity()) : list.entries.capacity());
        sized.pruneState = pruned ? list.pruneState.data() : nullptr;
        sized.pruneParts = prune.parts;
        compactKernel<<<blocksFor(static_cast<long long>(numTasks) * 32, kSearchThreads), kSearchThreads, 0, stream>>>(
            0, sized, list.scratchCapacity, settings.maxJClustersPerEntry, list.scratch.data(), list.pairCount.data(),
            list.pairOffset.data(), list.entryOffset.data(), list.pairs.data(), list.entries.data(),
            pruned ? list.innerPairs.data() : nullptr, pruned ? list.innerEntries.data() : nullptr,
            list.counters.data());
        HALOEX_CUDA_CHECK_LAUNCH();
    }
    if (lists[1].counted) {
        const DeviceList& nonlocal = lists[1];
        const FlagSizes sized{layout.state.data(), nonlocal.entryOffset.data() + taskCapacity(layout, 1),
                              nonlocal.counters.data() + kCompacted};
        layout.clusterFlag.zeroAsync(stream);
        layout.flaggedCount.zeroAsync(stream);
        const auto maxEntries = static_cast<long long>(nonlocal.entries.capacity());
        if (maxEntries > 0) {
            flagNonlocalHomeClusters<<<blocksFor(maxEntries * 32, kSearchThreads), kSearchThreads, 0, stream>>>(
                nonlocal.entries.data(), 0, sized, nonlocal.pairs.data(), 0, layout.clusterFlag.data());
            HALOEX_CUDA_CHECK_LAUNCH();
        }
        compactFlagged<<<blocksFor(std::max(layout.maxHomeClusters, 1), kSearchThreads), kSearchThreads, 0, stream>>>(
            layout.clusterFlag.data(), 0, sized, layout.nonlocalHomeClusters.data(), layout.flaggedCount.data());
        HALOEX_CUDA_CHECK_LAUNCH();
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(layout.flaggedCountHost.data(), layout.flaggedCount.data(), sizeof(int),
                                          cudaMemcpyDeviceToHost, stream));
    }
    mark(marks, "compaction", stream);
    for (int k = 0; k < 2; ++k) {
        DeviceList& list = lists[k];
        if (!list.counted) continue;
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(list.countersHost.data(), list.counters.data(),
                                          4 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream));
    }
}

namespace {

// What a build sets on a list, before it sets it: an empty, unpruned list.
void clearBuildResults(DeviceList& list) {
    list.numEntries = 0;
    list.numPairs = 0;
    list.atomPairs = 0;
    list.fillPending = false;
    list.pruned = false;
    list.prunedAtSearch = false;
}

}  // namespace

bool takeDeviceCompaction(DeviceList (&lists)[2], DeviceLayout& layout, const SearchPrune& prune) {
    const int* totals = lists[0].totalsHost.data();
    for (int k = 0; k < 2; ++k) {
        if (lists[k].counted && layout.numClusters > 0 && lists[k].countersHost[kCompacted] != 1) return false;
    }
    for (int k = 0; k < 2; ++k) {
        DeviceList& list = lists[k];
        clearBuildResults(list);
        if (!list.counted || layout.numClusters == 0) continue;
        list.numPairs = totals[2 * k];
        list.numEntries = list.numPairs > 0 ? totals[2 * k + 1] : 0;
        list.atomPairs = static_cast<long long>(list.countersHost[0]);
        // Within the capacities the kernel checked: no reallocation.
        list.pairs.resize(static_cast<std::size_t>(list.numPairs));
        list.entries.resize(static_cast<std::size_t>(list.numEntries));
        if (prune.parts > 0) {  // as preparePrune, with the part counter reset on the device
            list.pruned = list.numEntries > 0;
            list.pruneParts = prune.parts;
            list.rlistInner2 = prune.rlistInner2;
            list.innerPairs.resize(static_cast<std::size_t>(list.numPairs));
            list.innerEntries.resize(static_cast<std::size_t>(list.numEntries));
            list.prunedAtSearch = list.pruned;
        }
    }
    layout.flaggedCountPending = false;
    layout.numNonlocalHomeClusters =
        lists[1].counted && lists[1].numEntries > 0 && layout.numHomeClusters > 0 ? layout.flaggedCountHost[0] : 0;
    return true;
}

void finishSearchCounts(DeviceList (&lists)[2], DeviceLayout& layout, const SearchSettings& settings, double growth,
                        const SearchPrune& prune, cudaStream_t stream) {
    const int* totals = lists[0].totalsHost.data();
    for (DeviceList& list : lists) clearBuildResults(list);
    if (layout.numClusters == 0) return;  // no atom
    // Compaction of the scratch slots, or where a slot overflowed the fill
    // pass (the slots grow for the next build); the fill pass's check is read
    // after the caller's next synchronisation (finishSearch).
    for (int k = 0; k < 2; ++k) {
        DeviceList& list = lists[k];
        if (!list.counted) continue;
        const SearchParams p = paramsOf(list, layout, settings, prune, k);
        list.numPairs = totals[2 * k];
        list.numEntries = totals[2 * k + 1];
        const auto largest = static_cast<long long>(list.countersHost[2]);
        const bool overflow = largest > list.scratchCapacity;
        if (overflow) list.scratchCapacity = static_cast<int>(largest + largest / 4 + 16);
        if (list.numPairs == 0) {
            list.numEntries = 0;
            continue;
        }
        reserveWithHeadroom(list.pairs, static_cast<std::size_t>(list.numPairs), growth);
        reserveWithHeadroom(list.entries, static_cast<std::size_t>(list.numEntries), growth);
        const int numTasks = k == 1 ? layout.numClusters : layout.numHomeClusters;
        const int blocks = blocksFor(static_cast<long long>(numTasks) * 32, kSearchThreads);
        if (prune.parts > 0) preparePrune(list, prune.parts, prune.rlistInner2, growth, stream);
        if (!overflow) {
            list.atomPairs = static_cast<long long>(list.countersHost[0]);
            list.prunedAtSearch = list.pruned;
            compactKernel<<<blocks, kSearchThreads, 0, stream>>>(
                numTasks, DeviceSizes{}, p.scratchCapacity, p.maxJ, list.scratch.data(), list.pairCount.data(),
                list.pairOffset.data(), list.entryOffset.data(), list.pairs.data(), list.entries.data(),
                list.pruned ? list.innerPairs.data() : nullptr, list.pruned ? list.innerEntries.data() : nullptr,
                list.counters.data());
            HALOEX_CUDA_CHECK_LAUNCH();
            continue;
        }
        list.counters.zeroAsync(stream);
        searchKernel<kFill><<<blocks, kSearchThreads, 0, stream>>>(
            p, layout.columnClusterStart.data(), layout.bboxLo.data(), layout.bboxHi.data(), layout.xqNonlocal.data(),
            layout.zoneOfSlot.data(), list.pairCount.data(), list.pairOffset.data(), list.entryOffset.data(),
            list.pairs.data(), list.entries.data(), list.counters.data(), nullptr);
        HALOEX_CUDA_CHECK_LAUNCH();
        HALOEX_CUDA_CHECK(cudaMemcpyAsync(list.countersHost.data(), list.counters.data(),
                                          2 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream));
        list.fillPending = true;
    }
}

void finishSearch(DeviceList& list, bool nonlocal) {
    if (!list.fillPending) return;
    list.fillPending = false;
    if (list.countersHost[1] != 0) throwSearchPassesDisagree(nonlocal);
    list.atomPairs = static_cast<long long>(list.countersHost[0]);
}

}  // namespace haloex::md::gpu::detail
