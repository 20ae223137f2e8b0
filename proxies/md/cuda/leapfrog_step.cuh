#pragma once
// One atom's leapfrog step, shared by the update kernel (integrate.cu) and the
// one-rank fused update (nonbonded.cu), so both give the same bits.
#include "haloex/core/vec3.hpp"

namespace haloex::md::gpu {

// v <- lambda v + f s (s = dt / m);  x <- x + v dt.
__device__ __forceinline__ void leapfrogStep(Vec3f& x, Vec3f& v, const Vec3f& f, float lambda, float s, float dt) {
    v.x = lambda * v.x + f.x * s;
    v.y = lambda * v.y + f.y * s;
    v.z = lambda * v.z + f.z * s;
    x.x += v.x * dt;
    x.y += v.y * dt;
    x.z += v.z * dt;
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
