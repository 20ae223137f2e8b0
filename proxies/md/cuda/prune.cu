// Dynamic pruning of the cluster-pair lists, as GROMACS does on GPUs
// (nonbonded.hpp, NonbondedOptions::rlistInner): the outer list, built with
// rlist at the search, stays as it is; an inner list keeps, per entry, the
// cluster pairs that have an unmasked atom pair closer than rlistInner at the
// positions of the step that pruned it. The force kernel reads the inner
// list, so pairs that moved away since the search cost nothing.
//
// This file holds the full prune of a whole list: the search's compaction
// normally writes the inner list from the search's own distances
// (pair_search.cu); this kernel does it when a scratch slot overflowed and
// the fill pass built the list. The rolling prune of the
// later steps is fused into the force kernel (nonbonded.cu), which computes
// the distances of the entries it prunes anyway: a separate pass over a
// quarter of the list per step (this kernel, rolling) cost more on an H200
// than the smaller list saved (docs/md-engine.md).
//
// One warp per entry, as in the force kernel: the entry's pair records are
// fetched 32 at a time with one coalesced load (lane k holds record k of the
// chunk) and handed out by shuffles; for each j cluster, lane = 8 t + b tests i slots t and t + 4
// against j slot b with atomDistance2 -- the search's explicitly rounded
// distance, so pruneReference() (cluster_reference.cpp) decides every pair
// identically. A ballot gives the kept set, popc of the lower bits each kept
// record's place: kept records stay in their outer order.
#include "nonbonded_internal.cuh"

namespace haloex::md::gpu::detail {
namespace {

constexpr int kPruneThreads = 128;
constexpr int kPruneWarps = kPruneThreads / 32;

__device__ inline Float3 xyz(float4 v) { return {v.x, v.y, v.z}; }

__global__ void __launch_bounds__(kPruneThreads)
    pruneKernel(const ClusterEntry* __restrict__ entries, const ClusterPair* __restrict__ pairs, int numEntries,
                const float4* __restrict__ xq, Float3 boxLengths, float rlistInner2,
                ClusterEntry* __restrict__ innerEntries, ClusterPair* __restrict__ innerPairs) {
    const int lane = threadIdx.x & 31;
    const int ti = lane >> 3;  // i slots ti and ti + 4
    const int tj = lane & 7;   // j slot

    for (int e = blockIdx.x * kPruneWarps + (threadIdx.x >> 5); e < numEntries; e += gridDim.x * kPruneWarps) {
        const ClusterEntry entry = entries[e];
        const Float3 xi0 = xyz(xq[entry.ci * kClusterSize + ti]);
        const Float3 xi1 = xyz(xq[entry.ci * kClusterSize + ti + 4]);
        const int numJ = entry.jEnd - entry.jBegin;  // <= kMaxJClustersPerEntry (NonbondedOptions)
        int kept = 0;                                // records kept so far, in their order
        for (int chunk = 0; chunk < numJ; chunk += 32) {
            const int n = min(32, numJ - chunk);
            int4 record = make_int4(0, 0, 0, 0);  // {cj, shift, maskLo, maskHi} of pair chunk + lane
            if (lane < n) record = reinterpret_cast<const int4*>(pairs)[entry.jBegin + chunk + lane];
            unsigned keep = 0;  // bit k: pair chunk + k is kept (the same in every lane)
            for (int k = 0; k < n; ++k) {
                const int cj = __shfl_sync(kFullWarp, record.x, k);
                const int shift = __shfl_sync(kFullWarp, record.y, k);
                const unsigned maskLo = static_cast<unsigned>(__shfl_sync(kFullWarp, record.z, k));
                const unsigned maskHi = static_cast<unsigned>(__shfl_sync(kFullWarp, record.w, k));
                const Float3 xj = xyz(xq[cj * kClusterSize + tj]);
                const Float3 sv = shiftVector(shift, boxLengths);
                const bool near = (((maskLo >> lane) & 1u) != 0u && atomDistance2(xi0, xj, sv) < rlistInner2) ||
                                  (((maskHi >> lane) & 1u) != 0u && atomDistance2(xi1, xj, sv) < rlistInner2);
                if (__any_sync(kFullWarp, near)) keep |= 1u << k;
            }
            if (lane < n && ((keep >> lane) & 1u) != 0u) {
                const int place = kept + __popc(keep & ((1u << lane) - 1u));
                reinterpret_cast<int4*>(innerPairs)[entry.jBegin + place] = record;
            }
            kept += __popc(keep);
        }
        if (lane == 0) innerEntries[e] = ClusterEntry{entry.ci, entry.jBegin, entry.jBegin + kept, 0};
    }
}

}  // namespace

void preparePrune(DeviceList& list, int parts, float rlistInner2, double growth, cudaStream_t stream) {
    list.pruned = list.numEntries > 0;
    list.pruneParts = parts;
    list.rlistInner2 = rlistInner2;
    if (!list.pruned) return;
    reserveWithHeadroom(list.innerEntries, static_cast<std::size_t>(list.numEntries), growth);
    reserveWithHeadroom(list.innerPairs, static_cast<std::size_t>(list.numPairs), growth);
    // Part 0 first (advanced by the scatter after each force kernel).
    const int state[3] = {prunePartBegin(list.numEntries, parts, 0), prunePartBegin(list.numEntries, parts, 1), 0};
    list.pruneState.resize(3);
    HALOEX_CUDA_CHECK(cudaMemcpyAsync(list.pruneState.data(), state, sizeof(state), cudaMemcpyHostToDevice, stream));
}

void launchFullPrune(DeviceList& list, DeviceLayout& layout, bool local, Float3 boxLengths, cudaStream_t stream) {
    if (!list.pruned || list.numEntries == 0) return;
    const float4* xq = local ? layout.xqLocal.data() : layout.xqNonlocal.data();
    pruneKernel<<<blocksFor(list.numEntries, kPruneWarps), kPruneThreads, 0, stream>>>(
        list.entries.data(), list.pairs.data(), list.numEntries, xq, boxLengths, list.rlistInner2,
        list.innerEntries.data(), list.innerPairs.data());
    HALOEX_CUDA_CHECK_LAUNCH();
}

cudaFuncAttributes pruneKernelAttributes() {
    cudaFuncAttributes a{};
    HALOEX_CUDA_CHECK(cudaFuncGetAttributes(&a, pruneKernel));
    return a;
}

}  // namespace haloex::md::gpu::detail
