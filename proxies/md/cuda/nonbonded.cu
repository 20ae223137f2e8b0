// The non-bonded step on the GPU: per-step gathers of positions into slot
// order, the LJ + reaction-field cluster-pair kernel, and the scatter of the
// slot-ordered forces into the caller's array.
//
// Kernel layout: one warp per list entry (an i cluster and up to
// kMaxJClustersPerEntry j clusters, taken 32 at a time), two j clusters at a
// time: half h of the warp takes the entry's j clusters 2 m + h, and lane
// 16 h + 8 u + b computes i slots u, u + 2, u + 4, u + 6 against j slot b --
// four pair evaluations per lane for each j cluster it loads (a warp-wide
// 8x8 tile took two, and spent as many instructions again on the j load and
// the j-force sums). i forces stay in registers for the whole entry; j
// forces are summed over the two lanes of each j slot with one xor-shuffle
// per component and added with one float4 atomic (sm_90) into a
// slot-ordered buffer (eight consecutive float4 = one 128-byte line per j
// cluster, instead of 24 scattered scalar atomics into the caller's layout).
// The entry's pair records are fetched by one coalesced load and staged in
// shared memory, so the only dependent load per j cluster is its positions.
//
// Why gather positions every step instead of reading through the permutation:
// every j cluster is read by ~70 i clusters; gathered, each read is one
// 128-byte line (float4 x, y, z, q for 8 atoms) instead of 8 scattered 12-byte
// loads plus a separate charge load. The gather is one pass over the atoms.
#include <algorithm>
#include <type_traits>

#include "haloex/md/gpu/nonbonded.hpp"
#include "haloex/detail/cuda/dependent_launch.cuh"
#include "haloex/halo/home_coordinate_stores.cuh"
#include "leapfrog_step.cuh"
#include "nonbonded_internal.cuh"

namespace haloex::md::gpu {
namespace detail {
namespace {

constexpr int kNbThreads = 128;
constexpr int kNbWarps = kNbThreads / 32;
// Resident blocks per SM the force kernel is compiled for: 8 (32 warps, at
// most 64 registers per thread) for the kernel of most steps; 7 (72
// registers) where 64 would spill -- the energy steps' kernels and entries
// of more than 32 j clusters. Long entries with the rolling prune spill 8
// bytes at 72 registers and still run 3-4 % faster than at 6 blocks and 80
// (kernel-variants-NVIDIA-H100-2026-12-05.json; NonbondedGpu.ReportsKernelResources
// holds every kernel to its spill allowance, nonbondedKernelResources).
// The quarter tile (kQuarter) as its branch measured it: 6 blocks for long
// entries with the rolling prune, 7 where energies, long entries or the
// prune are on, else 8.
template <bool kEnergies, bool kPrune, bool kLongEntries, bool kQuarter>
constexpr int nbMinBlocks() {
    if constexpr (kQuarter) return kPrune && kLongEntries ? 6 : kEnergies || kLongEntries || kPrune ? 7 : 8;
    return kEnergies || kLongEntries ? 7 : 8;
}
constexpr int kThreads = 256;

// One pair: i atom xi against (shifted) j atom xj, counted when `inList` (its
// mask bit) and r < rc. Forces accumulate with FMAs: fi += F/r d, fj -= F/r d.
// kPruneEntry (an entry being pruned): also sets `near` when the pair is in
// the list and within rlistInner, with the search's rounding (atomDistance2:
// dx as here, then explicitly rounded squares and sums), so the CPU
// reference (pruneReference) decides alike.
template <bool kEnergies, bool kPruneEntry>
__device__ __forceinline__ void pairInteraction(const PairConstants& c, const float4& xi, const float4& xj, bool inList,
                                                float3& fi, float3& fj, float& lj, float& coul, float& virial,
                                                float rlistInner2, bool& near) {
    const float dx = xi.x - xj.x;
    const float dy = xi.y - xj.y;
    const float dz = xi.z - xj.z;
    const float r2 = __fmaf_rn(dz, dz, __fmaf_rn(dy, dy, dx * dx));
    if constexpr (kPruneEntry) {
        const float r2Search = __fadd_rn(__fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy)), __fmul_rn(dz, dz));
        near = near || (inList && r2Search < rlistInner2);
    } else {
        (void)rlistInner2;
        (void)near;
    }
    const bool interacts = inList && r2 < c.rc2;
    float vlj = 0.f, vc = 0.f;
    const float fscal = pairForceOverR<kEnergies>(c, r2, xi.w * xj.w, interacts, vlj, vc);
    fi.x = __fmaf_rn(fscal, dx, fi.x);
    fi.y = __fmaf_rn(fscal, dy, fi.y);
    fi.z = __fmaf_rn(fscal, dz, fi.z);
    fj.x = __fmaf_rn(-fscal, dx, fj.x);
    fj.y = __fmaf_rn(-fscal, dy, fj.y);
    fj.z = __fmaf_rn(-fscal, dz, fj.z);
    if constexpr (kEnergies) {
        lj += vlj;
        coul += vc;
        virial = __fmaf_rn(-0.5f * fscal, r2, virial);
    }
}

// f added to *address (x, y, z) where `add`: on sm_90 one float4 reduction,
// written as a predicated instruction (the compiler still branches around
// it, but with two instructions fewer per j cluster than around atomicAdd).
__device__ __forceinline__ void predicatedForceAdd(float4* address, float3 f, bool add) {
#if __CUDA_ARCH__ >= 900
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %4, 0;\n\t"
                 "@p red.global.add.v4.f32 [%0], {%1, %2, %3, %5};\n\t}"
                 :
                 : "l"(address), "f"(f.x), "f"(f.y), "f"(f.z), "r"(static_cast<int>(add)), "f"(0.f)
                 : "memory");
#else
    if (add) {
        atomicAdd(&address->x, f.x);
        atomicAdd(&address->y, f.y);
        atomicAdd(&address->z, f.z);
    }
#endif
}

// An entry's pair record as the force kernel stages it in shared memory,
// with the shift vector its index names (zero for the central image).
struct StagedPair {
    int4 pair;  // ClusterPair {cj, shift, maskLo, maskHi}
    float4 shift;
};

// The lane's four i atoms: i slots u, u + 2, u + 4 and u + 6 of the entry's
// i cluster (u = bit 3 of the lane), as positions and as forces.
struct LaneIAtoms {
    float4 x[4];
    float3 f[4];
};

// The j clusters of one entry (records staged in shared memory), two at a
// time: half h of the warp (lanes 16 h .. 16 h + 15) takes records 2 m + h.
// Lane 16 h + 8 u + b computes j slot b against its four i slots, so a lane
// evaluates four pairs per j cluster it loads and the j force is summed over
// two lanes (one shuffle per component; the warp-wide tile of two pairs per
// lane needed two shuffles and a j load per two pairs). Forces into
// i.f (registers) and f (atomics), energies into lj / coul / virial.
// kPruneEntry: returns bit k set when pair k has an atom pair within
// rlistInner (the rolling prune's decision, see pairInteraction).
template <bool kEnergies, bool kPruneEntry>
__device__ __forceinline__ unsigned jLoop(const KernelParams& p, const StagedPair* records, int numJ,
                                          const float4* __restrict__ xq, float4* __restrict__ f, LaneIAtoms& i,
                                          float& lj, float& coul, float& virial, float rlistInner2) {
    const int lane = threadIdx.x & 31;
    const int half = lane >> 4;
    const int u = (lane >> 3) & 1;
    const int tj = lane & 7;
    // Mask bit of pair (i slot s, j slot b): bit 8 (s & 3) + b of maskLo
    // (s < 4) or maskHi. Slots u and u + 4 test bitA, u + 2 and u + 6 bitB.
    const unsigned bitA = 1u << (8 * u + tj);
    const unsigned bitB = bitA << 16;
    unsigned keep = 0;
    // An odd count's last pass: the upper half reads the padding record the
    // staging wrote after the last (no pair in its masks: no force, no keep;
    // its atomic adds zero).
    const StagedPair* const halfRecords = records + half;
    for (int k0 = 0; k0 < numJ; k0 += 2) {
        const int4 record = halfRecords[k0].pair;  // {cj, shift, maskLo, maskHi}
        const unsigned maskLo = static_cast<unsigned>(record.z);
        const unsigned maskHi = static_cast<unsigned>(record.w);
        const int cj = record.x;
        float4 xj = xq[cj * kClusterSize + tj];
        // Added even when zero (the central image): a branch on the shift
        // compiles to eight predicated instructions, this to four.
        const float4 sv = halfRecords[k0].shift;
        xj.x += sv.x;
        xj.y += sv.y;
        xj.z += sv.z;
        // -0 is the additive identity the compiler may fold (0 - t is not -t for t = 0).
        float3 fj = make_float3(-0.f, -0.f, -0.f);
        bool near = false;
        pairInteraction<kEnergies, kPruneEntry>(p.c, i.x[0], xj, (maskLo & bitA) != 0u, i.f[0], fj, lj, coul, virial,
                                                rlistInner2, near);
        pairInteraction<kEnergies, kPruneEntry>(p.c, i.x[1], xj, (maskLo & bitB) != 0u, i.f[1], fj, lj, coul, virial,
                                                rlistInner2, near);
        pairInteraction<kEnergies, kPruneEntry>(p.c, i.x[2], xj, (maskHi & bitA) != 0u, i.f[2], fj, lj, coul, virial,
                                                rlistInner2, near);
        pairInteraction<kEnergies, kPruneEntry>(p.c, i.x[3], xj, (maskHi & bitB) != 0u, i.f[3], fj, lj, coul, virial,
                                                rlistInner2, near);
        if constexpr (kPruneEntry) {
            const unsigned nearLanes = __ballot_sync(kFullWarp, near);
            keep |= ((nearLanes & 0xffffu) != 0u ? 1u : 0u) << k0;
            keep |= ((nearLanes >> 16) != 0u ? 1u : 0u) << (k0 + 1);  // never set past an odd count's end
        }
        // Sum over the two lanes of j slot tj in this half: lanes 16 h + tj, 16 h + 8 + tj.
        fj.x += __shfl_xor_sync(kFullWarp, fj.x, 8);
        fj.y += __shfl_xor_sync(kFullWarp, fj.y, 8);
        fj.z += __shfl_xor_sync(kFullWarp, fj.z, 8);
        predicatedForceAdd(&f[cj * kClusterSize + tj], fj, u == 0);
    }
    return keep;
}

// The quarter tile (kQuarter, entries of 32 j clusters or more): the lane's i atoms, all eight slots of the entry's i cluster, positions
// staged in shared memory (read back as broadcasts) and forces in registers.
struct LaneIAtomsQuarter {
    const float4* x;
    float3 f[8];
};

// The j clusters of one entry (records staged in shared memory), four at a
// time: quarter q of the warp (lanes 8 q .. 8 q + 7) takes records 4 m + q,
// and lane 8 q + b computes j slot b against all eight i slots -- eight
// pairs for each j cluster it loads, its j force summed in the lane (no
// shuffle) and added by one float4 atomic. Forces into i.f (registers) and
// f (atomics), energies into lj / coul / virial. kPruneEntry: returns bit k
// set when pair k has an atom pair within rlistInner (the rolling prune's
// decision, see pairInteraction).
template <bool kEnergies, bool kPruneEntry>
__device__ __forceinline__ unsigned jLoopQuarter(const KernelParams& p, const StagedPair* records, int numJ,
                                                 const float4* __restrict__ xq, float4* __restrict__ f,
                                                 LaneIAtomsQuarter& i, float& lj, float& coul, float& virial,
                                                 float rlistInner2) {
    const int lane = threadIdx.x & 31;
    const int quarter = lane >> 3;
    const int tj = lane & 7;
    unsigned keep = 0;
    // A count that is not a multiple of four: the idle quarters of the last
    // pass read the padding records the staging wrote after the last (no
    // pair in their masks: no force, no keep; their atomics add zero).
    const StagedPair* const quarterRecords = records + quarter;
    for (int k0 = 0; k0 < numJ; k0 += 4) {
        const int4 record = quarterRecords[k0].pair;  // {cj, shift, maskLo, maskHi}
        // Pair (i slot s, j slot b) is bit 8 (s & 3) + b of maskLo (s < 4) or maskHi.
        const unsigned maskLo = static_cast<unsigned>(record.z) >> tj;
        const unsigned maskHi = static_cast<unsigned>(record.w) >> tj;
        const int cj = record.x;
        float4 xj = xq[cj * kClusterSize + tj];
        // Added even when zero (the central image): a branch on the shift
        // compiles to eight predicated instructions, this to four.
        const float4 sv = quarterRecords[k0].shift;
        xj.x += sv.x;
        xj.y += sv.y;
        xj.z += sv.z;
        // -0 is the additive identity the compiler may fold (0 - t is not -t for t = 0).
        float3 fj = make_float3(-0.f, -0.f, -0.f);
        bool near = false;
#pragma unroll
        for (int s = 0; s < 8; ++s) {
            const unsigned bits = s < 4 ? maskLo : maskHi;
            pairInteraction<kEnergies, kPruneEntry>(p.c, i.x[s], xj, (bits & (1u << (8 * (s & 3)))) != 0u, i.f[s], fj,
                                                    lj, coul, virial, rlistInner2, near);
        }
        if constexpr (kPruneEntry) {
            const unsigned nearLanes = __ballot_sync(kFullWarp, near);
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                keep |= (((nearLanes >> (8 * q)) & 0xffu) != 0u ? 1u : 0u) << (k0 + q);  // none past the end
            }
        }
        predicatedForceAdd(&f[cj * kClusterSize + tj], fj, true);
    }
    return keep;
}

// The entry's j loop in the kernel's tile.
template <bool kEnergies, bool kPruneEntry, bool kQuarter, class IAtoms>
__device__ __forceinline__ unsigned tileLoop(const KernelParams& p, const StagedPair* records, int numJ,
                                             const float4* __restrict__ xq, float4* __restrict__ f, IAtoms& i,
                                             float& lj, float& coul, float& virial, float rlistInner2) {
    if constexpr (kQuarter) {
        return jLoopQuarter<kEnergies, kPruneEntry>(p, records, numJ, xq, f, i, lj, coul, virial, rlistInner2);
    } else {
        return jLoop<kEnergies, kPruneEntry>(p, records, numJ, xq, f, i, lj, coul, virial, rlistInner2);
    }
}

// Rolling pruning fused into the force kernel (kPrune): the entries of the
// part the device state names are evaluated from the outer list -- the same
// forces, as pairs beyond rc add nothing -- and, from the distances the
// kernel computes anyway, get their inner list rewritten for the next steps.
// The other entries read the inner list. The scatter kernel that follows on
// the stream moves the state on (advancePrunePart), so a replayed graph
// prunes the next part each step. (A last-block-done counter in this kernel
// cost ~10 % at 720 000 atoms: a block-wide barrier plus a same-address
// atomic in each of ~70 000 short blocks.)
struct PruneArgs {
    const ClusterEntry* outerEntries;
    const ClusterPair* outerPairs;
    ClusterEntry* innerEntries;  // entries and pairs passed to the kernel are these
    ClusterPair* innerPairs;
    const int* state;  // DeviceList::pruneState: [first entry, end entry, part]
    float rlistInner2;
};

// The part after this step's, and its entry range (one thread).
__device__ __forceinline__ void advancePrunePart(int* state, int numEntries, int parts) {
    const int next = (state[2] + 1) % parts;
    state[0] = prunePartBegin(numEntries, parts, next);
    state[1] = prunePartBegin(numEntries, parts, next + 1);
    state[2] = next;
}

// (kPrune: entries / pairs are the inner list, which the kernel rewrites for
// the entries it prunes; those it reads from the outer list instead, so no
// location is both read through these pointers and written in one launch.)
// kLongEntries: entries of more than 32 j clusters, taken 32 at a time;
// without it an entry is one chunk and the loop below runs once (the
// kernel then fits 64 registers without spilling: 8 resident blocks per SM,
// where the chunked build needs 72 and gets 7, or 80 and 6 with pruning).
// kQuarter: the quarter tile (jLoopQuarter) for entries of 32 j clusters or
// more, where it measured 2.5-3.4 % faster; the four-pair tile for shorter
// ones (kernel-variants-NVIDIA-H200-2026-12-05-c.json).
template <bool kEnergies, bool kPrune, bool kLongEntries, bool kQuarter>
__global__ void __launch_bounds__(kNbThreads, (nbMinBlocks<kEnergies, kPrune, kLongEntries, kQuarter>()))
    nonbondedKernel(const KernelParams p, const ClusterEntry* __restrict__ entries, int numEntries,
                    const ClusterPair* __restrict__ pairs, const float4* __restrict__ xq, float4* __restrict__ f,
                    double* __restrict__ energies, const PruneArgs prune) {
    // Launched as a dependent of the gather (detail/cuda/dependent_launch.cuh).
    cuda::waitForPrerequisiteGrids();
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    // The four-pair tile's lane roles (unused by the quarter tile):
    [[maybe_unused]] const int half = lane >> 4;     // takes the entry's records 2 m + half (jLoop)
    [[maybe_unused]] const int u = (lane >> 3) & 1;  // i slots u, u + 2, u + 4, u + 6
    [[maybe_unused]] const int tj = lane & 7;        // j slot
    const unsigned laneBit = 1u << lane;
    // The entry's pair records, staged 32 at a time (one coalesced load) and
    // read back by each half warp (one address per half): one instruction per j cluster.
    __shared__ StagedPair records[kNbWarps][32];
    __shared__ float4 xiStaged[kNbWarps][kQuarter ? kClusterSize : 1];  // kQuarter: the entry's i positions
    // Energy steps: each lane's double sums over its entries, kept in shared
    // memory (in registers they spilled: the four-atom tile leaves no room).
    __shared__ double laneSums[kEnergies ? kNbThreads : 1][3];
    if constexpr (kEnergies) laneSums[threadIdx.x][0] = laneSums[threadIdx.x][1] = laneSums[threadIdx.x][2] = 0.0;

    for (int e = blockIdx.x * kNbWarps + warp; e < numEntries; e += gridDim.x * kNbWarps) {
        bool pruneEntry = false;  // warp-uniform
        if constexpr (kPrune) {
            const int2 range = __ldg(reinterpret_cast<const int2*>(prune.state));  // [first, end) entry
            pruneEntry = e >= range.x && e < range.y;
        }
        const ClusterEntry entry = pruneEntry ? prune.outerEntries[e] : entries[e];
        const ClusterPair* entryPairs = pruneEntry ? prune.outerPairs : pairs;
        const int ci = entry.ci;
        std::conditional_t<kQuarter, LaneIAtomsQuarter, LaneIAtoms> i;
        if constexpr (kQuarter) {
            __syncwarp();  // the previous entry's reads of xiStaged are done
            if (lane < kClusterSize) xiStaged[warp][lane] = xq[ci * kClusterSize + lane];
            __syncwarp();
            i.x = xiStaged[warp];
#pragma unroll
            for (int s = 0; s < 8; ++s) i.f[s] = make_float3(0.f, 0.f, 0.f);
        } else {
#pragma unroll
            for (int a = 0; a < 4; ++a) {
                i.x[a] = xq[ci * kClusterSize + u + 2 * a];
                i.f[a] = make_float3(0.f, 0.f, 0.f);
            }
        }
        float lj = 0.f, coul = 0.f, virial = 0.f;
        const int numJ = entry.jEnd - entry.jBegin;  // <= 32, or kMaxJClustersPerEntry with kLongEntries
        [[maybe_unused]] int keptSoFar = 0;          // kPrune: records of this entry kept so far (warp-uniform)
        // The records 32 at a time: each chunk staged in shared memory by one
        // coalesced load, then read back as broadcasts.
        for (int chunk = 0; chunk < numJ; chunk += 32) {
            const int n = kLongEntries ? min(32, numJ - chunk) : numJ;
            __syncwarp();  // the previous chunk's (or entry's) reads of `records` are done
            if (lane < n) {
                const int4 record = reinterpret_cast<const int4*>(entryPairs)[entry.jBegin + chunk + lane];
                const float3 sv = p.shifts[record.y];
                records[warp][lane] = StagedPair{record, make_float4(sv.x, sv.y, sv.z, 0.f)};
            } else if (kQuarter ? lane < ((n + 3) & ~3) : lane == n) {
                // Padding for jLoop's upper half when n is odd (jLoopQuarter's
                // idle quarters when n is not a multiple of four): the i
                // cluster itself (a valid index), central image, no pair.
                records[warp][lane] = StagedPair{make_int4(ci, 0, 0, 0), make_float4(0.f, 0.f, 0.f, 0.f)};
            }
            __syncwarp();
            if constexpr (kPrune) {
                // Two copies of the loop: entries not pruned now run exactly the
                // plain kernel's (a run-time flag in the loop cost issue slots).
                if (pruneEntry) {
                    // bit k = record k of this chunk has an atom pair within rlistInner
                    const unsigned keep = tileLoop<kEnergies, true, kQuarter>(p, records[warp], n, xq, f, i, lj, coul,
                                                                              virial, prune.rlistInner2);
                    // Kept records in their order, after the entry's kept ones
                    // so far (popc of the kept bits below each lane's record);
                    // read back from `records` before the next chunk's
                    // __syncwarp lets them change.
                    if (lane < n && ((keep >> lane) & 1u) != 0u) {
                        reinterpret_cast<int4*>(
                            prune.innerPairs)[entry.jBegin + keptSoFar + __popc(keep & (laneBit - 1u))] =
                            records[warp][lane].pair;
                    }
                    keptSoFar += __popc(keep);
                } else {
                    tileLoop<kEnergies, false, kQuarter>(p, records[warp], n, xq, f, i, lj, coul, virial, 0.f);
                }
            } else {
                tileLoop<kEnergies, false, kQuarter>(p, records[warp], n, xq, f, i, lj, coul, virial, 0.f);
            }
            if constexpr (!kLongEntries) break;  // one chunk: the whole entry
        }
        if constexpr (kQuarter) {
            // Sum over all 32 lanes of each i slot as a transposing reduction:
            // each exchange halves what a lane holds (24 values, 12, 6, 3), then
            // x / y and z over the last two. Bits 4, 3 and 2 of the lane pick
            // the slot it keeps (4 b4 + 2 b3 + b2); bit 1 picks x or y, and
            // lanes with bit 0 clear add x or y, the others with bit 1 clear z.
            float3 f4[4];
            const bool b4 = (lane & 16) != 0;
#pragma unroll
            for (int a = 0; a < 4; ++a) {
                f4[a] = b4 ? i.f[a + 4] : i.f[a];
                const float3 sent = b4 ? i.f[a] : i.f[a + 4];
                f4[a].x += __shfl_xor_sync(kFullWarp, sent.x, 16);
                f4[a].y += __shfl_xor_sync(kFullWarp, sent.y, 16);
                f4[a].z += __shfl_xor_sync(kFullWarp, sent.z, 16);
            }
            float3 f2[2];
            const bool b3 = (lane & 8) != 0;
#pragma unroll
            for (int a = 0; a < 2; ++a) {
                f2[a] = b3 ? f4[a + 2] : f4[a];
                const float3 sent = b3 ? f4[a] : f4[a + 2];
                f2[a].x += __shfl_xor_sync(kFullWarp, sent.x, 8);
                f2[a].y += __shfl_xor_sync(kFullWarp, sent.y, 8);
                f2[a].z += __shfl_xor_sync(kFullWarp, sent.z, 8);
            }
            const bool b2 = (lane & 4) != 0;
            float3 mine = b2 ? f2[1] : f2[0];
            const float3 other = b2 ? f2[0] : f2[1];
            mine.x += __shfl_xor_sync(kFullWarp, other.x, 4);
            mine.y += __shfl_xor_sync(kFullWarp, other.y, 4);
            mine.z += __shfl_xor_sync(kFullWarp, other.z, 4);
            const bool keepsY = (lane & 2) != 0;
            float xy = (keepsY ? mine.y : mine.x) + __shfl_xor_sync(kFullWarp, keepsY ? mine.x : mine.y, 2);
            float z = mine.z + __shfl_xor_sync(kFullWarp, mine.z, 2);
            xy += __shfl_xor_sync(kFullWarp, xy, 1);
            z += __shfl_xor_sync(kFullWarp, z, 1);
            const bool addsXy = (lane & 1) == 0;
            if (addsXy || !keepsY) {
                const int slot = (b4 ? 4 : 0) + (b3 ? 2 : 0) + (b2 ? 1 : 0);
                float* const fi = reinterpret_cast<float*>(&f[ci * kClusterSize + slot]);
                atomicAdd(fi + (addsXy ? (keepsY ? 1 : 0) : 2), addsXy ? xy : z);
            }
        } else {
            // Sum over the sixteen lanes of each i slot (the two halves, the
            // eight j slots) as a transposing reduction: each exchange halves
            // what a lane holds (twelve values, six, three), then x / y and z
            // over the last two. Half h keeps slots u + 4 h and u + 4 h + 2
            // (i.f[2 h], i.f[2 h + 1]); bit 0 of tj picks one of them; lane
            // tj then holds, of that slot, component x or y (tj & 2) and z:
            // lanes with tj & 4 clear add x or y, the others with tj & 2 clear add z.
            const bool upperHalf = half != 0;
            float3 kept[2];
#pragma unroll
            for (int a = 0; a < 2; ++a) {
                kept[a] = upperHalf ? i.f[a + 2] : i.f[a];
                const float3 sent = upperHalf ? i.f[a] : i.f[a + 2];
                kept[a].x += __shfl_xor_sync(kFullWarp, sent.x, 16);
                kept[a].y += __shfl_xor_sync(kFullWarp, sent.y, 16);
                kept[a].z += __shfl_xor_sync(kFullWarp, sent.z, 16);
            }
            const bool second = (tj & 1) != 0;  // keeps slot u + 4 h + 2
            float3 mine = second ? kept[1] : kept[0];
            const float3 other = second ? kept[0] : kept[1];
            mine.x += __shfl_xor_sync(kFullWarp, other.x, 1);
            mine.y += __shfl_xor_sync(kFullWarp, other.y, 1);
            mine.z += __shfl_xor_sync(kFullWarp, other.z, 1);
            const bool keepsY = (tj & 2) != 0;
            float xy = (keepsY ? mine.y : mine.x) + __shfl_xor_sync(kFullWarp, keepsY ? mine.x : mine.y, 2);
            float z = mine.z + __shfl_xor_sync(kFullWarp, mine.z, 2);
            xy += __shfl_xor_sync(kFullWarp, xy, 4);
            z += __shfl_xor_sync(kFullWarp, z, 4);
            const bool addsXy = (tj & 4) == 0;
            if (addsXy || !keepsY) {
                const int slot = u + 4 * half + (second ? 2 : 0);
                float* const fi = reinterpret_cast<float*>(&f[ci * kClusterSize + slot]);
                atomicAdd(fi + (addsXy ? (keepsY ? 1 : 0) : 2), addsXy ? xy : z);
            }
        }
        if constexpr (kEnergies) {
            laneSums[threadIdx.x][0] += lj;
            laneSums[threadIdx.x][1] += coul;
            laneSums[threadIdx.x][2] += virial;
        }
        if constexpr (kPrune) {
            if (pruneEntry && lane == 0) {
                prune.innerEntries[e] = ClusterEntry{ci, entry.jBegin, entry.jBegin + keptSoFar, 0};
            }
        }
    }

    // Let the scatter launch only now: triggered at the start, its blocks
    // would sit resident and idle for this whole kernel, taking room on the
    // SMs from the kernels of the other stream (the non-local list's kernel
    // fits in one wave, so its trigger would fire at once).
    cuda::allowDependentGrids();

    if constexpr (kEnergies) {
        // Warp, then block sums; three double atomics per block (the energy
        // launch caps its grid at what the device holds at once).
        double sumLj = laneSums[threadIdx.x][0], sumCoul = laneSums[threadIdx.x][1];
        double sumVirial = laneSums[threadIdx.x][2];
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) {
            sumLj += __shfl_down_sync(kFullWarp, sumLj, offset);
            sumCoul += __shfl_down_sync(kFullWarp, sumCoul, offset);
            sumVirial += __shfl_down_sync(kFullWarp, sumVirial, offset);
        }
        __shared__ double partial[kNbWarps][3];
        if (lane == 0) {
            partial[warp][0] = sumLj;
            partial[warp][1] = sumCoul;
            partial[warp][2] = sumVirial;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            double total[3] = {0.0, 0.0, 0.0};
            for (int w = 0; w < kNbWarps; ++w) {
                for (int t = 0; t < 3; ++t) total[t] += partial[w][t];
            }
            atomicAdd(&energies[kEnergyLj], total[0]);
            atomicAdd(&energies[kEnergyCoulomb], total[1]);
            atomicAdd(&energies[kEnergyVirial], total[2]);
        }
    } else {
        (void)energies;
        (void)laneSums;
    }
}

// The slots a gather or scatter visits, numbered t = 0, 1, ...: first the
// slots of `listedClusters` (listedSlots of them), then the contiguous slots
// from tailBegin on. The local list: no listed clusters, tail = home slots.
// The non-local list: its home clusters, then the halo slots.
struct SlotSet {
    const int* listedClusters = nullptr;
    long long listedSlots = 0;
    long long tailBegin = 0;
    long long count = 0;

    __device__ long long slot(long long t) const {
        return t < listedSlots
                   ? static_cast<long long>(listedClusters[t / kClusterSize]) * kClusterSize + t % kClusterSize
                   : tailBegin + (t - listedSlots);
    }
};

// haloOnly (the non-local list beside the fused update with a halo): the
// halo slots alone; updateHome keeps the home clusters' slots.
SlotSet slotSet(const DeviceLayout& layout, bool local, bool haloOnly) {
    SlotSet s;
    if (local) {
        s.count = layout.numHomeSlots();
    } else if (haloOnly) {
        s.tailBegin = layout.numHomeSlots();
        s.count = layout.numSlots() - layout.numHomeSlots();
    } else {
        s.listedClusters = layout.nonlocalHomeClusters.data();
        s.listedSlots = static_cast<long long>(layout.numNonlocalHomeClusters) * kClusterSize;
        s.tailBegin = layout.numHomeSlots();
        s.count = layout.numNonlocalSlots();
    }
    return s;
}

// Positions of the set's slots from the caller's array; empty slots keep
// their far-away position and zero charge from the build.
__global__ void gatherKernel(const Vec3f* __restrict__ x, const int* __restrict__ atomOfSlot,
                             const float* __restrict__ chargeOfSlot, const SlotSet set, float4* __restrict__ xq) {
    cuda::waitForPrerequisiteGrids();
    cuda::allowDependentGrids();
    const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= set.count) return;
    const long long slot = set.slot(t);
    const int atom = atomOfSlot[slot];
    if (atom < 0) return;
    const Vec3f p = x[atom];
    xq[slot] = make_float4(p.x, p.y, p.z, chargeOfSlot[slot]);
}

// Adds slot-ordered forces into the caller's array and clears them for the
// next step (atomics: the other list's scatter and the halo force unpack may
// add to the same atoms concurrently). With pruneState (the list is pruned):
// moves the rolling prune on to the next part -- the force kernel before it
// on the stream has read the current one.
__global__ void scatterForcesKernel(float4* __restrict__ fSlots, const int* __restrict__ atomOfSlot, const SlotSet set,
                                    Vec3f* __restrict__ f, int* pruneState, int numEntries, int parts) {
    cuda::waitForPrerequisiteGrids();
    cuda::allowDependentGrids();
    if (pruneState != nullptr && blockIdx.x == 0 && threadIdx.x == 0) advancePrunePart(pruneState, numEntries, parts);
    const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= set.count) return;
    const long long slot = set.slot(t);
    const float4 v = fSlots[slot];
    fSlots[slot] = make_float4(0.f, 0.f, 0.f, 0.f);
    const int atom = atomOfSlot[slot];
    if (atom < 0) return;
    atomicAdd(&f[atom].x, v.x);
    atomicAdd(&f[atom].y, v.y);
    atomicAdd(&f[atom].z, v.z);
}

// The non-local list's rolling prune moved on where the update has no atom
// to do it (launchUpdateLocal with numHome 0).
__global__ void advancePruneKernel(PruneAdvance prune) {
    cuda::waitForPrerequisiteGrids();
    cuda::allowDependentGrids();
    advancePrunePart(prune.state, prune.numEntries, prune.parts);
}

// One rank, no halo (Nonbonded::updateLocal): the local scatter, the leapfrog
// update and the next step's gather in one pass over the home atoms, in their
// order (their positions, velocities and forces are read and written
// contiguously; only the slot-ordered force and position are reached through
// slotOfAtom). Each home atom has exactly one slot and nothing else adds
// to its force, so the force is stored (no atomics, no clearing); the new
// position goes to the caller's array and straight into the slot order the
// next force kernel reads. Empty slots are not visited: nothing reads their
// force, and their far-away position stays as the build wrote it. kEnergies: the
// leapfrog-average kinetic energy and the non-finite check of the old
// position and the force (an energy step's checkFinite). kHaloForces (a
// rank with a halo, Nonbonded::updateHome): the atom's force is its slot's
// plus what `haloForces` holds for it -- the non-local kernel's scatter and
// the reverse exchange add there -- which is then zeroed for the next step
// (the caller clears the rest: CoordinateForceHalo::clearHaloForces), plus
// its non-local slot's (left there by the non-local list's halo-only
// scatter, zero otherwise); `forces` is not written, and the new position
// also goes to the non-local slot order, so that the non-local gather visits
// the halo slots alone.
template <bool kEnergies, bool kHaloForces>
__global__ void __launch_bounds__(kThreads)
    updateLocalKernel(float4* __restrict__ fSlots, const int* __restrict__ slotOfAtom,
                      const float* __restrict__ chargeOfSlot, int numHome, float4* __restrict__ xq, LeapfrogArgs a,
                      Vec3f* __restrict__ forces, Vec3f* __restrict__ haloForces, float4* __restrict__ fNonlocalSlots,
                      float4* __restrict__ xqNonlocal, int* firstBad, int* pruneState, int numEntries, int parts,
                      PruneAdvance nonlocalPrune, const transport::HomeCoordinateStores homeStores) {
    cuda::waitForPrerequisiteGrids();
    cuda::allowDependentGrids();
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        if (pruneState != nullptr) advancePrunePart(pruneState, numEntries, parts);
        if (nonlocalPrune.state != nullptr) {
            advancePrunePart(nonlocalPrune.state, nonlocalPrune.numEntries, nonlocalPrune.parts);
        }
    }
    const float lambda = a.velocityScale != nullptr ? *a.velocityScale : 1.0f;
    double ekin2 = 0.0;  // sum m (|v_old|^2 + |v_new|^2), as leapfrogKernel
    for (int atom = blockIdx.x * blockDim.x + threadIdx.x; atom < numHome; atom += gridDim.x * blockDim.x) {
        const int slot = slotOfAtom[atom];
        const float4 fv = fSlots[slot];
        fSlots[slot] = make_float4(0.f, 0.f, 0.f, 0.f);
        Vec3f f{fv.x, fv.y, fv.z};
        if constexpr (kHaloForces) {
            const Vec3f g = haloForces[atom];
            haloForces[atom] = Vec3f{0.f, 0.f, 0.f};
            const float4 n = fNonlocalSlots[slot];
            fNonlocalSlots[slot] = make_float4(0.f, 0.f, 0.f, 0.f);
            f.x += g.x + n.x;
            f.y += g.y + n.y;
            f.z += g.z + n.z;
        }
        Vec3f x = a.x[atom];
        if constexpr (kEnergies) {
            if (!finite3(x) || !finite3(f)) {
                atomicMin(reinterpret_cast<unsigned*>(firstBad), static_cast<unsigned>(atom));
            }
        }
        leapfrogAtom<kEnergies>(a, atom, f, x, lambda, ekin2);
        const float4 next = make_float4(x.x, x.y, x.z, chargeOfSlot[slot]);
        xq[slot] = next;
        if constexpr (kHaloForces) {
            xqNonlocal[slot] = next;
            if (homeStores.numPulses > 0) haloex::device::storeHomeCoordinate(homeStores, atom, x);
        } else {
            forces[atom] = f;
        }
    }
    if constexpr (kEnergies) blockSumAtomicAdd<kThreads>(0.25 * ekin2, a.averageKineticEnergy);
    // The receivers that need nothing but the home entries learn of them as
    // soon as the last block is done (every block takes part).
    if constexpr (kHaloForces) haloex::device::signalHomeStores(homeStores);
}

// Diagnostic census of a list: count[0] its atom pairs closer than rc, with
// the search's rounding (atomDistance2), i.e. exactly what
// evaluateListReference counts; count[1] its cluster pairs; count[2] its
// atom pairs (mask bits), what the force kernel evaluates; count[3] its
// entries with no pair (a pruned list's empty passes).
__global__ void countWithinCutoffKernel(const ClusterEntry* __restrict__ entries, int numEntries,
                                        const ClusterPair* __restrict__ pairs, const float4* __restrict__ xq,
                                        Float3 boxLengths, float rc2, unsigned long long* __restrict__ count) {
    const int e = static_cast<int>((static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32);
    if (e >= numEntries) return;
    const int lane = threadIdx.x & 31;
    const int ti = lane >> 3, tj = lane & 7;
    const ClusterEntry entry = entries[e];
    const float4 a0 = xq[entry.ci * kClusterSize + ti];
    const float4 a1 = xq[entry.ci * kClusterSize + ti + 4];
    unsigned long long n = 0, masked = 0;
    for (int k = entry.jBegin; k < entry.jEnd; ++k) {
        const ClusterPair pr = pairs[k];
        masked += __popc(pr.maskLo) + __popc(pr.maskHi);
        const float4 b = xq[pr.cj * kClusterSize + tj];
        const Float3 sv = shiftVector(pr.shift, boxLengths);
        const bool in0 = ((pr.maskLo >> lane) & 1u) && atomDistance2({a0.x, a0.y, a0.z}, {b.x, b.y, b.z}, sv) < rc2;
        const bool in1 = ((pr.maskHi >> lane) & 1u) && atomDistance2({a1.x, a1.y, a1.z}, {b.x, b.y, b.z}, sv) < rc2;
        n += __popc(__ballot_sync(kFullWarp, in0)) + __popc(__ballot_sync(kFullWarp, in1));
    }
    if (lane == 0) {
        atomicAdd(&count[0], n);
        atomicAdd(&count[1], static_cast<unsigned long long>(entry.jEnd - entry.jBegin));
        atomicAdd(&count[2], masked);
        if (entry.jEnd == entry.jBegin) atomicAdd(&count[3], 1ull);
    }
}

}  // namespace

void launchGather(const Vec3f* dX, DeviceLayout& layout, bool local, cudaStream_t stream, bool haloOnly,
                  cuda::StreamOrder order) {
    const SlotSet set = slotSet(layout, local, haloOnly);
    if (set.count == 0) return;
    float4* xq = local ? layout.xqLocal.data() : layout.xqNonlocal.data();
    cuda::launchOrdered(order, gatherKernel, blocksFor(set.count, kThreads), kThreads, 0, stream, dX,
                        layout.atomOfSlot.data(), layout.chargeOfSlot.data(), set, xq);
}

// The force kernel for a list: entries longer than 32 or not, pruned or not, with energies or not.
template <bool kLongEntries, bool kQuarter>
auto kernelFor(bool pruned, bool energies) {
    return pruned ? (energies ? nonbondedKernel<true, true, kLongEntries, kQuarter>
                              : nonbondedKernel<false, true, kLongEntries, kQuarter>)
                  : (energies ? nonbondedKernel<true, false, kLongEntries, kQuarter>
                              : nonbondedKernel<false, false, kLongEntries, kQuarter>);
}

auto forceKernel(ForceTile tile, bool pruned, bool energies) {
    return tile == ForceTile::QuarterLong ? kernelFor<true, true>(pruned, energies)
           : tile == ForceTile::Quarter   ? kernelFor<false, true>(pruned, energies)
                                          : kernelFor<false, false>(pruned, energies);
}

void launchNonbonded(const KernelParams& params, DeviceList& list, DeviceLayout& layout, bool local, bool energies,
                     int maxEnergyBlocks, double* dEnergies, cudaStream_t stream, cuda::StreamOrder order) {
    if (list.numEntries == 0) return;
    const float4* xq = local ? layout.xqLocal.data() : layout.xqNonlocal.data();
    float4* f = local ? layout.fLocal.data() : layout.fNonlocal.data();
    const int blocks = blocksFor(list.numEntries, kNbWarps);
    // With pruning the entries' jEnd is the pruned end: an entry that kept
    // nothing costs one empty pass (numJ = 0), its i forces add zero.
    const ClusterEntry* entries = list.evaluatedEntries();
    const ClusterPair* pairs = list.evaluatedPairs();
    const int energyBlocks = std::min(blocks, std::max(maxEnergyBlocks, 1));
    const PruneArgs prune = list.pruned
                                ? PruneArgs{list.entries.data(),    list.pairs.data(),      list.innerEntries.data(),
                                            list.innerPairs.data(), list.pruneState.data(), list.rlistInner2}
                                : PruneArgs{};
    // Long entries are always 32 j clusters or more: the quarter tile.
    const ForceTile tile = list.longEntries   ? ForceTile::QuarterLong
                           : list.quarterTile ? ForceTile::Quarter
                                              : ForceTile::Four;
    const auto kernel = forceKernel(tile, list.pruned, energies);
    cuda::launchOrdered(order, kernel, energies ? energyBlocks : blocks, kNbThreads, 0, stream, params, entries,
                        list.numEntries, pairs, xq, f, dEnergies, prune);
}

void launchScatter(DeviceLayout& layout, DeviceList& list, bool local, Vec3f* dF, cudaStream_t stream, bool haloOnly) {
    const SlotSet set = slotSet(layout, local, haloOnly);
    if (set.count == 0) return;
    float4* f = local ? layout.fLocal.data() : layout.fNonlocal.data();
    int* pruneState = list.pruned ? list.pruneState.data() : nullptr;
    cuda::launchDependent(scatterForcesKernel, blocksFor(set.count, kThreads), kThreads, 0, stream, f,
                          layout.atomOfSlot.data(), set, dF, pruneState, list.numEntries, list.pruneParts);
}

void launchUpdateLocal(DeviceLayout& layout, DeviceList& list, const LeapfrogArgs& args, Vec3f* dF, Vec3f* dHaloForces,
                       int* dFirstBad, cudaStream_t stream, const transport::HomeCoordinateStores* homeStores,
                       PruneAdvance nonlocalPrune) {
    const int numHome = layout.numHome;
    if (numHome == 0) {
        // No atom to move, but the non-local list (halo pairs) may still
        // need its prune moved on: the update is where it moves.
        if (nonlocalPrune.state != nullptr) {
            cuda::launchDependent(advancePruneKernel, 1, 1, 0, stream, nonlocalPrune);
        }
        return;
    }
    int* pruneState = list.pruned ? list.pruneState.data() : nullptr;
    // With energies at most kMaxReductionBlocks blocks stride over the atoms:
    // few same-address double atomics.
    const bool energies = args.averageKineticEnergy != nullptr;
    const int blocks =
        energies ? std::min(blocksFor(numHome, kThreads), kMaxReductionBlocks) : blocksFor(numHome, kThreads);
    const bool haloForces = dHaloForces != nullptr;
    const auto kernel = haloForces ? (energies ? updateLocalKernel<true, true> : updateLocalKernel<false, true>)
                                   : (energies ? updateLocalKernel<true, false> : updateLocalKernel<false, false>);
    cuda::launchDependent(kernel, blocks, kThreads, 0, stream, layout.fLocal.data(), layout.slotOfAtom.data(),
                          layout.chargeOfSlot.data(), numHome, layout.xqLocal.data(), args, dF, dHaloForces,
                          layout.fNonlocal.data(), layout.xqNonlocal.data(), dFirstBad, pruneState, list.numEntries,
                          list.pruneParts, nonlocalPrune,
                          homeStores != nullptr && haloForces ? *homeStores : transport::HomeCoordinateStores{});
}

void launchCountWithinCutoff(const DeviceList& list, bool outer, DeviceLayout& layout, bool local, Float3 boxLengths,
                             float rc2, unsigned long long* dCount, cudaStream_t stream) {
    if (list.numEntries == 0) return;
    const float4* xq = local ? layout.xqLocal.data() : layout.xqNonlocal.data();
    const ClusterEntry* entries = outer ? list.entries.data() : list.evaluatedEntries();
    const ClusterPair* pairs = outer ? list.pairs.data() : list.evaluatedPairs();
    countWithinCutoffKernel<<<blocksFor(static_cast<long long>(list.numEntries) * 32, kThreads), kThreads, 0, stream>>>(
        entries, list.numEntries, pairs, xq, boxLengths, rc2, dCount);
    HALOEX_CUDA_CHECK_LAUNCH();
}

int forceKernelBlocksPerSm() {
    static_assert(kForceKernelWarpsPerBlock == kNbWarps);
    int perSm = 1;
    HALOEX_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, nonbondedKernel<false, false, false, false>,
                                                                    kNbThreads, 0));
    return std::max(perSm, 1);
}

int energyKernelBlocksPerSm() {
    int perSm = 1;
    HALOEX_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, nonbondedKernel<true, false, false, false>,
                                                                    kNbThreads, 0));
    return std::max(perSm, 1);
}

cudaFuncAttributes nonbondedKernelAttributes(bool energies, bool prune, ForceTile tile) {
    cudaFuncAttributes a{};
    HALOEX_CUDA_CHECK(cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(forceKernel(tile, prune, energies))));
    return a;
}

}  // namespace detail
}  // namespace haloex::md::gpu
