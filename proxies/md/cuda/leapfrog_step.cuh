#pragma once
// One atom's leapfrog step, shared by the update kernel (integrate.cu) and the
// one-rank fused update (nonbonded.cu), so both give the same bits.
#include "haloex/core/vec3.hpp"
#include "haloex/md/gpu/integrate.hpp"

namespace haloex::md::gpu {

// Atom i of the update `a` with force f, its position x read by the caller:
// v <- lambda v + f dt / m, x <- x + v dt, both stored into a's arrays (x
// also left in `x`). kAverageEkin: adds m (|v_old|^2 + |v_new|^2) to ekin2.
template <bool kAverageEkin>
__device__ __forceinline__ void leapfrogAtom(const LeapfrogArgs& a, int i, const Vec3f& f, Vec3f& x, float lambda,
                                             double& ekin2) {
    const float invMass = a.invMassPerAtom != nullptr ? a.invMassPerAtom[i] : a.invMass;
    const float s = invMass * a.dt;
    Vec3f v = a.v[i];
    const Vec3f vOld = v;
    v.x = lambda * v.x + f.x * s;
    v.y = lambda * v.y + f.y * s;
    v.z = lambda * v.z + f.z * s;
    x.x += v.x * a.dt;
    x.y += v.y * a.dt;
    x.z += v.z * a.dt;
    a.v[i] = v;
    a.x[i] = x;
    if constexpr (kAverageEkin) {
        const float m = a.invMassPerAtom != nullptr ? 1.0f / invMass : a.mass;
        ekin2 += static_cast<double>(m * (norm2(vOld) + norm2(v)));
    }
}

// Reductions of the update kernels: enough blocks to fill the GPU, few enough
// that the per-block double atomics on one address stay cheap.
inline constexpr int kMaxReductionBlocks = 264;

// Sums `value` over a block of kBlockThreads; thread 0 adds it to *target.
template <int kBlockThreads>
__device__ void blockSumAtomicAdd(double value, double* target) {
    __shared__ double partial[kBlockThreads / 32];
    for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_down_sync(0xffffffffu, value, offset);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) partial[warp] = value;
    __syncthreads();
    if (threadIdx.x == 0) {
        double total = 0.0;
        for (int w = 0; w < kBlockThreads / 32; ++w) total += partial[w];
        atomicAdd(target, total);
    }
}

__device__ __forceinline__ bool finite3(const Vec3f& a) { return isfinite(a.x) && isfinite(a.y) && isfinite(a.z); }

}  // namespace haloex::md::gpu
