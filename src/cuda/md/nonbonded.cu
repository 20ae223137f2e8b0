// The non-bonded step on the GPU: per-step gathers of positions into slot
// order, the LJ + reaction-field cluster-pair kernel, and the scatter of the
// slot-ordered forces into the caller's array.
//
// Kernel layout: one warp per list entry (an i cluster and up to 32 j
// clusters). Lane = 8 t + b computes i slots t and t + 4 against j slot b, so
// an 8x8 tile takes two pair evaluations per lane. i forces stay in registers
// for the whole entry; j forces are summed over the four lanes of each j slot
// with two xor-shuffles and added with one float4 atomic (sm_90) into a
// slot-ordered buffer (eight consecutive float4 = one 128-byte line per j
// cluster, instead of 24 scattered scalar atomics into the caller's layout).
// The entry's pair records are fetched by one coalesced load and handed out
// by shuffles, so the only dependent load per j cluster is its positions.
//
// Why gather positions every step instead of reading through the permutation:
// every j cluster is read by ~70 i clusters; gathered, each read is one
// 128-byte line (float4 x, y, z, q for 8 atoms) instead of 8 scattered 12-byte
// loads plus a separate charge load. The gather is one pass over the atoms.
#include <algorithm>

#include "haloex/md/gpu/nonbonded.hpp"
#include "nonbonded_internal.cuh"

namespace haloex::md::gpu {
namespace detail {
namespace {

constexpr int kNbThreads = 128;
constexpr int kNbWarps = kNbThreads / 32;
constexpr int kNbMinBlocks = 8;  // 32 warps per SM: at most 64 registers per thread
constexpr int kThreads = 256;

// One pair: i atom xi against (shifted) j atom xj, counted when `inList` (its
// mask bit) and r < rc. Forces accumulate with FMAs: fi += F/r d, fj -= F/r d.
template <bool kEnergies>
__device__ __forceinline__ void pairInteraction(const PairConstants& c, const float4& xi, const float4& xj,
                                                bool inList, float3& fi, float3& fj, float& lj, float& coul,
                                                float& virial) {
    const float dx = xi.x - xj.x;
    const float dy = xi.y - xj.y;
    const float dz = xi.z - xj.z;
    const float r2 = __fmaf_rn(dz, dz, __fmaf_rn(dy, dy, dx * dx));
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

__device__ __forceinline__ void atomicAddForce(float4* address, float3 f) {
#if __CUDA_ARCH__ >= 900
    atomicAdd(address, make_float4(f.x, f.y, f.z, 0.f));
#else
    atomicAdd(&address->x, f.x);
    atomicAdd(&address->y, f.y);
    atomicAdd(&address->z, f.z);
#endif
}

template <bool kEnergies>
__global__ void __launch_bounds__(kNbThreads, kNbMinBlocks)
    nonbondedKernel(const KernelParams p, const ClusterEntry* __restrict__ entries, int numEntries,
                    const ClusterPair* __restrict__ pairs, const float4* __restrict__ xq, float4* __restrict__ f,
                    double* __restrict__ energies) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int ti = lane >> 3;  // i slots ti and ti + 4
    const int tj = lane & 7;   // j slot
    const unsigned laneBit = 1u << lane;
    // The entry's pair records, staged once per entry (one coalesced load) and
    // read back as shared-memory broadcasts: one instruction per j cluster.
    __shared__ int4 records[kNbWarps][32];
    double sumLj = 0.0, sumCoul = 0.0, sumVirial = 0.0;

    for (int e = blockIdx.x * kNbWarps + warp; e < numEntries; e += gridDim.x * kNbWarps) {
        const ClusterEntry entry = entries[e];
        const int ci = entry.ci;
        const float4 xi0 = xq[ci * kClusterSize + ti];
        const float4 xi1 = xq[ci * kClusterSize + ti + 4];
        float3 fi0 = make_float3(0.f, 0.f, 0.f);
        float3 fi1 = make_float3(0.f, 0.f, 0.f);
        float lj = 0.f, coul = 0.f, virial = 0.f;
        const int numJ = entry.jEnd - entry.jBegin;  // <= 32 (NonbondedOptions)
        __syncwarp();  // the previous entry's reads of `records` are done
        if (lane < numJ) records[warp][lane] = reinterpret_cast<const int4*>(pairs)[entry.jBegin + lane];
        __syncwarp();

        for (int k = 0; k < numJ; ++k) {
            const int4 record = records[warp][k];  // {cj, shift, maskLo, maskHi}
            const int cj = record.x;
            float4 xj = xq[cj * kClusterSize + tj];
            if (record.y != kCentralShift) {  // uniform branch; most pairs need no image
                const float3 sv = p.shifts[record.y];
                xj.x += sv.x;
                xj.y += sv.y;
                xj.z += sv.z;
            }
            // -0 is the additive identity the compiler may fold (0 - t is not -t for t = 0).
            float3 fj = make_float3(-0.f, -0.f, -0.f);
            pairInteraction<kEnergies>(p.c, xi0, xj, (static_cast<unsigned>(record.z) & laneBit) != 0u, fi0, fj, lj,
                                       coul, virial);
            pairInteraction<kEnergies>(p.c, xi1, xj, (static_cast<unsigned>(record.w) & laneBit) != 0u, fi1, fj, lj,
                                       coul, virial);
            // Sum over the four lanes of j slot tj: lanes tj, tj + 8, tj + 16, tj + 24.
            fj.x += __shfl_xor_sync(kFullWarp, fj.x, 8);
            fj.y += __shfl_xor_sync(kFullWarp, fj.y, 8);
            fj.z += __shfl_xor_sync(kFullWarp, fj.z, 8);
            fj.x += __shfl_xor_sync(kFullWarp, fj.x, 16);
            fj.y += __shfl_xor_sync(kFullWarp, fj.y, 16);
            fj.z += __shfl_xor_sync(kFullWarp, fj.z, 16);
            if (ti == 0) atomicAddForce(&f[cj * kClusterSize + tj], fj);
        }
        // Sum over the eight lanes of i slot ti: lanes 8 ti .. 8 ti + 7.
#pragma unroll
        for (int offset = 1; offset < 8; offset <<= 1) {
            fi0.x += __shfl_xor_sync(kFullWarp, fi0.x, offset);
            fi0.y += __shfl_xor_sync(kFullWarp, fi0.y, offset);
            fi0.z += __shfl_xor_sync(kFullWarp, fi0.z, offset);
            fi1.x += __shfl_xor_sync(kFullWarp, fi1.x, offset);
            fi1.y += __shfl_xor_sync(kFullWarp, fi1.y, offset);
            fi1.z += __shfl_xor_sync(kFullWarp, fi1.z, offset);
        }
        if (tj == 0) {
            atomicAddForce(&f[ci * kClusterSize + ti], fi0);
            atomicAddForce(&f[ci * kClusterSize + ti + 4], fi1);
        }
        if constexpr (kEnergies) {
            sumLj += lj;
            sumCoul += coul;
            sumVirial += virial;
        }
    }

    if constexpr (kEnergies) {
        // Warp, then block sums; three double atomics per block (the energy
        // launch caps its grid at what the device holds at once).
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
        (void)sumLj;
        (void)sumCoul;
        (void)sumVirial;
    }
}

// Positions of slots [begin, end) from the caller's array; empty slots keep
// their far-away position and zero charge from the build.
__global__ void gatherKernel(const Vec3f* __restrict__ x, const int* __restrict__ atomOfSlot,
                             const float* __restrict__ chargeOfSlot, long long begin, long long end,
                             float4* __restrict__ xq) {
    const long long slot = begin + static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (slot >= end) return;
    const int atom = atomOfSlot[slot];
    if (atom < 0) return;
    const Vec3f p = x[atom];
    xq[slot] = make_float4(p.x, p.y, p.z, chargeOfSlot[slot]);
}

// Adds slot-ordered forces into the caller's array and clears them for the
// next step (atomics: the other list's scatter and the halo force unpack may
// add to the same atoms concurrently).
__global__ void scatterForcesKernel(float4* __restrict__ fSlots, const int* __restrict__ atomOfSlot,
                                    long long numSlots, Vec3f* __restrict__ f) {
    const long long slot = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (slot >= numSlots) return;
    const float4 v = fSlots[slot];
    fSlots[slot] = make_float4(0.f, 0.f, 0.f, 0.f);
    const int atom = atomOfSlot[slot];
    if (atom < 0) return;
    atomicAdd(&f[atom].x, v.x);
    atomicAdd(&f[atom].y, v.y);
    atomicAdd(&f[atom].z, v.z);
}

// Diagnostic: atom pairs of the list closer than rc, with the search's
// rounding (atomDistance2), i.e. exactly what evaluateListReference counts.
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
    unsigned long long n = 0;
    for (int k = entry.jBegin; k < entry.jEnd; ++k) {
        const ClusterPair pr = pairs[k];
        const float4 b = xq[pr.cj * kClusterSize + tj];
        const Float3 sv = shiftVector(pr.shift, boxLengths);
        const bool in0 = ((pr.maskLo >> lane) & 1u) && atomDistance2({a0.x, a0.y, a0.z}, {b.x, b.y, b.z}, sv) < rc2;
        const bool in1 = ((pr.maskHi >> lane) & 1u) && atomDistance2({a1.x, a1.y, a1.z}, {b.x, b.y, b.z}, sv) < rc2;
        n += __popc(__ballot_sync(kFullWarp, in0)) + __popc(__ballot_sync(kFullWarp, in1));
    }
    if (lane == 0) atomicAdd(count, n);
}

}  // namespace

void launchGather(const Vec3f* dX, DeviceLayout& layout, bool local, cudaStream_t stream) {
    const long long slots = local ? layout.numHomeSlots() : layout.numSlots();
    if (slots == 0) return;
    float4* xq = local ? layout.xqLocal.data() : layout.xqNonlocal.data();
    gatherKernel<<<blocksFor(slots, kThreads), kThreads, 0, stream>>>(dX, layout.atomOfSlot.data(),
                                                                     layout.chargeOfSlot.data(), 0, slots, xq);
    HALOEX_CUDA_CHECK_LAUNCH();
}

void launchNonbonded(const KernelParams& params, const DeviceList& list, DeviceLayout& layout, bool local,
                     bool energies, int maxEnergyBlocks, double* dEnergies, cudaStream_t stream) {
    if (list.numEntries == 0) return;
    const float4* xq = local ? layout.xqLocal.data() : layout.xqNonlocal.data();
    float4* f = local ? layout.fLocal.data() : layout.fNonlocal.data();
    const int blocks = blocksFor(list.numEntries, kNbWarps);
    if (energies) {
        nonbondedKernel<true><<<std::min(blocks, std::max(maxEnergyBlocks, 1)), kNbThreads, 0, stream>>>(
            params, list.entries.data(), list.numEntries, list.pairs.data(), xq, f, dEnergies);
    } else {
        nonbondedKernel<false><<<blocks, kNbThreads, 0, stream>>>(params, list.entries.data(), list.numEntries,
                                                                  list.pairs.data(), xq, f, dEnergies);
    }
    HALOEX_CUDA_CHECK_LAUNCH();
}

void launchScatter(DeviceLayout& layout, bool local, Vec3f* dF, cudaStream_t stream) {
    const long long slots = local ? layout.numHomeSlots() : layout.numSlots();
    if (slots == 0) return;
    float4* f = local ? layout.fLocal.data() : layout.fNonlocal.data();
    scatterForcesKernel<<<blocksFor(slots, kThreads), kThreads, 0, stream>>>(f, layout.atomOfSlot.data(), slots, dF);
    HALOEX_CUDA_CHECK_LAUNCH();
}

void launchCountWithinCutoff(const DeviceList& list, DeviceLayout& layout, bool local, Float3 boxLengths, float rc2,
                             unsigned long long* dCount, cudaStream_t stream) {
    if (list.numEntries == 0) return;
    const float4* xq = local ? layout.xqLocal.data() : layout.xqNonlocal.data();
    countWithinCutoffKernel<<<blocksFor(static_cast<long long>(list.numEntries) * 32, kThreads), kThreads, 0,
                              stream>>>(list.entries.data(), list.numEntries, list.pairs.data(), xq, boxLengths, rc2,
                                        dCount);
    HALOEX_CUDA_CHECK_LAUNCH();
}

int forceKernelBlocksPerSm() {
    static_assert(kForceKernelWarpsPerBlock == kNbWarps);
    int perSm = 1;
    HALOEX_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, nonbondedKernel<false>, kNbThreads, 0));
    return std::max(perSm, 1);
}

int energyKernelBlocksPerSm() {
    int perSm = 1;
    HALOEX_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, nonbondedKernel<true>, kNbThreads, 0));
    return std::max(perSm, 1);
}

cudaFuncAttributes nonbondedKernelAttributes(bool energies) {
    cudaFuncAttributes a{};
    if (energies) {
        HALOEX_CUDA_CHECK(cudaFuncGetAttributes(&a, nonbondedKernel<true>));
    } else {
        HALOEX_CUDA_CHECK(cudaFuncGetAttributes(&a, nonbondedKernel<false>));
    }
    return a;
}

}  // namespace detail
}  // namespace haloex::md::gpu
