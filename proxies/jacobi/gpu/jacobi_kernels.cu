#include "haloex/cuda/check.hpp"
#include "haloex/stencil/jacobi_update.hpp"
#include "jacobi_kernels.hpp"
#include "../core/jacobi_field.hpp"

namespace haloex::jacobi::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

__device__ __forceinline__ std::int64_t lineAt(const stencil::Line& line, int k) {
    return line.start + static_cast<std::int64_t>(k) * line.stride;
}

// Adds the block's sum of v into *norm (thread values; every thread calls).
__device__ void addBlockSum(double v, double* norm) {
    __shared__ double partial[kWarps];
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        double total = 0.0;
        for (int w = 0; w < kWarps; ++w) total += partial[w];
        if (total != 0.0) atomicAdd(norm, total);
    }
}

__device__ int lineOfBlock(const int* firstBlock, int numLines, int block) {
    int l = 0;
    while (l + 1 < numLines && block >= firstBlock[l + 1]) ++l;
    return l;
}

__global__ void initFieldKernel(double* a, int nx, int ny, std::int64_t ax, int originX, int originY,
                                long long globalNx, long long globalNy, bool periodic) {
    const std::int64_t total = ax * static_cast<std::int64_t>(ny + 2);
    for (std::int64_t c = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; c < total;
         c += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const long long i = c % ax - 1;
        const long long j = c / ax - 1;
        a[c] = initialValue(originX + i, originY + j, globalNx, globalNy, periodic);
    }
}

__global__ void __launch_bounds__(kThreads)
    boundaryKernel(BoundaryWork w, const double* __restrict__ cur, double* __restrict__ next, std::int64_t ax,
                   double* __restrict__ send, double* norm) {
    const int l = lineOfBlock(w.firstBlock, w.numLines, blockIdx.x);
    const stencil::Line line = w.lines[l];
    const int k = (blockIdx.x - w.firstBlock[l]) * kThreads + threadIdx.x;
    double d2 = 0.0;
    if (k < line.count) {
        const std::int64_t c = lineAt(line, k);
        const double old = cur[c];
        const double v = stencil::jacobiAt(cur, c, ax);
        next[c] = v;
        if (w.packOffset[l] >= 0) send[w.packOffset[l] + k] = v;
        if (k >= w.normBegin[l] && k < w.normEnd[l]) d2 = (v - old) * (v - old);
    }
    if (norm) addBlockSum(d2, norm);
}

__global__ void __launch_bounds__(kThreads)
    interiorKernel(const double* __restrict__ cur, double* __restrict__ next, std::int64_t ax, unsigned cols,
                   unsigned cells, double* norm) {
    const unsigned l = blockIdx.x * kThreads + threadIdx.x;
    double d2 = 0.0;
    if (l < cells) {
        const unsigned j = l / cols;
        const unsigned i = l - j * cols;
        const std::int64_t c = static_cast<std::int64_t>(i + 2) + ax * static_cast<std::int64_t>(j + 2);
        const double old = cur[c];
        const double v = stencil::jacobiAt(cur, c, ax);
        next[c] = v;
        d2 = (v - old) * (v - old);
    }
    if (norm) addBlockSum(d2, norm);
}

__global__ void __launch_bounds__(kThreads) referenceKernel(const double* __restrict__ cur, double* __restrict__ next,
                                                            long long nx, long long ny, double* norm) {
    const long long l = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x;
    double d2 = 0.0;
    if (l < nx * ny) {
        const long long j = l / nx;
        const long long i = l - j * nx;
        const long long ax = nx + 2;
        const long long c = (i + 1) + ax * (j + 1);
        const double old = cur[c];
        const double v = stencil::jacobiAt(cur, c, ax);
        next[c] = v;
        d2 = (v - old) * (v - old);
    }
    if (norm) addBlockSum(d2, norm);
}

__global__ void wrapKernel(double* a, long long nx, long long ny) {
    const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    const long long ax = nx + 2;
    auto at = [&](long long i, long long j) { return (i + 1) + ax * (j + 1); };
    if (t < nx) {
        a[at(t, -1)] = a[at(t, ny - 1)];
        a[at(t, ny)] = a[at(t, 0)];
    }
    if (t < ny) {
        a[at(-1, t)] = a[at(nx - 1, t)];
        a[at(nx, t)] = a[at(0, t)];
    }
}

int blocksFor(long long threads) { return static_cast<int>((threads + kThreads - 1) / kThreads); }

}  // namespace

int planBlocks(const stencil::Line* lines, int numLines, int* firstBlock) {
    int blocks = 0;
    for (int l = 0; l < numLines; ++l) {
        firstBlock[l] = blocks;
        blocks += blocksFor(lines[l].count);
    }
    firstBlock[numLines] = blocks;
    return blocks;
}

void initField(double* a, int nx, int ny, std::int64_t ax, int originX, int originY, long long globalNx,
               long long globalNy, bool periodic, cudaStream_t stream) {
    const long long total = ax * static_cast<long long>(ny + 2);
    const int blocks = static_cast<int>(std::min<long long>(blocksFor(total), 65536));
    initFieldKernel<<<blocks, kThreads, 0, stream>>>(a, nx, ny, ax, originX, originY, globalNx, globalNy, periodic);
    HALOEX_CUDA_CHECK_LAUNCH();
}

void computeBoundary(const BoundaryWork& work, const double* cur, double* next, std::int64_t ax, double* send,
                     double* norm, cudaStream_t stream) {
    const int blocks = work.firstBlock[work.numLines];
    if (blocks == 0) return;
    boundaryKernel<<<blocks, kThreads, 0, stream>>>(work, cur, next, ax, send, norm);
    HALOEX_CUDA_CHECK_LAUNCH();
}

void computeInterior(const double* cur, double* next, std::int64_t ax, int nx, int ny, double* norm,
                     cudaStream_t stream) {
    if (nx <= 2 || ny <= 2) return;
    const auto cols = static_cast<unsigned>(nx - 2);
    const unsigned cells = cols * static_cast<unsigned>(ny - 2);
    interiorKernel<<<blocksFor(cells), kThreads, 0, stream>>>(cur, next, ax, cols, cells, norm);
    HALOEX_CUDA_CHECK_LAUNCH();
}

void referenceStep(const double* cur, double* next, long long nx, long long ny, double* norm, cudaStream_t stream) {
    referenceKernel<<<blocksFor(nx * ny), kThreads, 0, stream>>>(cur, next, nx, ny, norm);
    HALOEX_CUDA_CHECK_LAUNCH();
}

void referenceWrap(double* a, long long nx, long long ny, cudaStream_t stream) {
    wrapKernel<<<blocksFor(nx > ny ? nx : ny), kThreads, 0, stream>>>(a, nx, ny);
    HALOEX_CUDA_CHECK_LAUNCH();
}

}  // namespace haloex::jacobi::gpu
