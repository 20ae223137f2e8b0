// Leapfrog update, kinetic energy and the non-finite check (integrate.hpp).
#include <algorithm>
#include <cstdint>

#include "haloex/cuda/check.hpp"
#include "haloex/md/gpu/integrate.hpp"
#include "leapfrog_step.cuh"

namespace haloex::md::gpu {
namespace {

constexpr int kThreads = 256;

int blocksFor(int n) { return std::max(1, (n + kThreads - 1) / kThreads); }

template <bool kAverageEkin>
__global__ void __launch_bounds__(kThreads) leapfrogKernel(LeapfrogArgs a) {
    const float lambda = a.velocityScale != nullptr ? *a.velocityScale : 1.0f;
    double ekin2 = 0.0;  // sum m (|v_old|^2 + |v_new|^2), halved twice at the end
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < a.numAtoms; i += gridDim.x * blockDim.x) {
        Vec3f x = a.x[i];
        leapfrogAtom<kAverageEkin>(a, i, a.f[i], x, lambda, ekin2);
    }
    if constexpr (kAverageEkin) blockSumAtomicAdd<kThreads>(0.25 * ekin2, a.averageKineticEnergy);
}

__global__ void __launch_bounds__(kThreads)
    kineticEnergyKernel(const Vec3f* __restrict__ v, int n, float mass, const float* __restrict__ massPerAtom,
                        double* __restrict__ ekin) {
    double sum = 0.0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float m = massPerAtom != nullptr ? massPerAtom[i] : mass;
        sum += static_cast<double>(m * norm2(v[i]));
    }
    blockSumAtomicAdd<kThreads>(0.5 * sum, ekin);
}

__global__ void checkFiniteKernel(const Vec3f* __restrict__ x, const Vec3f* __restrict__ f, int n,
                                  unsigned* __restrict__ firstBad) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const bool bad = !finite3(x[i]) || (f != nullptr && !finite3(f[i]));
    // "None" is all bits set, so an unsigned minimum keeps the first bad atom.
    if (bad) atomicMin(firstBad, static_cast<unsigned>(i));
}

__global__ void chargesOfTypesKernel(const std::int32_t* __restrict__ types, int n, float charge,
                                     float* __restrict__ out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = types[i] == 0 ? charge : -charge;
}

}  // namespace

void leapfrog(const LeapfrogArgs& args, cudaStream_t stream) {
    if (args.numAtoms <= 0) return;
    const int blocks = std::min(blocksFor(args.numAtoms), args.averageKineticEnergy ? kMaxReductionBlocks : 1 << 30);
    if (args.averageKineticEnergy != nullptr) {
        leapfrogKernel<true><<<blocks, kThreads, 0, stream>>>(args);
    } else {
        leapfrogKernel<false><<<blocks, kThreads, 0, stream>>>(args);
    }
    HALOEX_CUDA_CHECK_LAUNCH();
}

void accumulateKineticEnergy(const Vec3f* v, int numAtoms, float mass, const float* massPerAtom, double* dEkin,
                             cudaStream_t stream) {
    if (numAtoms <= 0) return;
    kineticEnergyKernel<<<std::min(blocksFor(numAtoms), kMaxReductionBlocks), kThreads, 0, stream>>>(v, numAtoms, mass,
                                                                                                     massPerAtom,
                                                                                                     dEkin);
    HALOEX_CUDA_CHECK_LAUNCH();
}

void resetFiniteCheck(int* dFirstBad, cudaStream_t stream) {
    HALOEX_CUDA_CHECK(cudaMemsetAsync(dFirstBad, 0xff, sizeof(int), stream));
}

void checkFinite(const Vec3f* x, const Vec3f* f, int numAtoms, int* dFirstBad, cudaStream_t stream) {
    if (numAtoms <= 0) return;
    checkFiniteKernel<<<blocksFor(numAtoms), kThreads, 0, stream>>>(x, f, numAtoms,
                                                                    reinterpret_cast<unsigned*>(dFirstBad));
    HALOEX_CUDA_CHECK_LAUNCH();
}

void chargesOfTypes(const std::int32_t* types, int n, float charge, float* out, cudaStream_t stream) {
    if (n <= 0) return;
    chargesOfTypesKernel<<<(n + 255) / 256, 256, 0, stream>>>(types, n, charge, out);
    HALOEX_CUDA_CHECK_LAUNCH();
}

}  // namespace haloex::md::gpu
