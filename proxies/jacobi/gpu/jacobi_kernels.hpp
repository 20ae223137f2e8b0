#pragma once
// Kernels of the CPU-orchestrated Jacobi variants (their halo moves through
// haloex::GridHalo, halo_variant.cpp) and of the one-GPU reference
// (jacobi_kernels.cu). Launch on `stream` and return at once.
#include <cuda_runtime.h>

#include <cstdint>

#include "haloex/stencil/jacobi_layout.hpp"

namespace haloex::jacobi::gpu {

inline constexpr int kMaxBoundaryLines = 8;

// The boundary lines of one rank, computed in one launch into `next`; a sent
// line's cell k also goes to send[packOffset[l] + k] (the halo API's send
// staging: GridHalo::bindPackedSends), so no pack kernel follows. Cells k in
// [normBegin, normEnd) count towards the norm.
struct BoundaryWork {
    stencil::Line lines[kMaxBoundaryLines];
    std::int64_t packOffset[kMaxBoundaryLines];  // -1: not sent (a fixed global edge)
    int normBegin[kMaxBoundaryLines];
    int normEnd[kMaxBoundaryLines];
    int firstBlock[kMaxBoundaryLines + 1];  // blocks of line l: [firstBlock[l], firstBlock[l + 1])
    int numLines = 0;
};

// Fills firstBlock from the lines' counts; returns the blocks to launch.
int planBlocks(const stencil::Line* lines, int numLines, int* firstBlock);

// Initial field of a block (origin, extents, allocated row length ax), halo included.
void initField(double* a, int nx, int ny, std::int64_t ax, int originX, int originY, long long globalNx,
               long long globalNy, bool periodic, cudaStream_t stream);

// norm (optional): sum of (new - old)^2 added atomically. send: the staging
// the packOffsets index.
void computeBoundary(const BoundaryWork& work, const double* cur, double* next, std::int64_t ax, double* send,
                     double* norm, cudaStream_t stream);
// Cells i in [1, nx-1), j in [1, ny-1) of a block with allocated row length ax.
void computeInterior(const double* cur, double* next, std::int64_t ax, int nx, int ny, double* norm,
                     cudaStream_t stream);

// One-GPU reference over the whole grid (allocated (nx + 2) x (ny + 2)):
// every interior cell, then (periodic) the wrap of the halo.
void referenceStep(const double* cur, double* next, long long nx, long long ny, double* norm, cudaStream_t stream);
void referenceWrap(double* a, long long nx, long long ny, cudaStream_t stream);

}  // namespace haloex::jacobi::gpu
