#pragma once
// The 5-point Jacobi update, written once for the host and the device so
// every implementation (CPU reference, single-GPU reference, every transport)
// performs the same operations in the same order and gets the same bits.
// It has no multiply-add to contract: only additions, then one product.
#include <cstdint>

#if defined(__CUDACC__)
#define HALOEX_STENCIL_HD __host__ __device__ __forceinline__
#else
#define HALOEX_STENCIL_HD inline
#endif

namespace haloex::stencil {

HALOEX_STENCIL_HD double jacobiUpdate(double west, double east, double south, double north) {
    return 0.25 * ((west + east) + (south + north));
}

// New value of the cell at local index `c` of an array with row length `ax`.
HALOEX_STENCIL_HD double jacobiAt(const double* a, std::int64_t c, std::int64_t ax) {
    return jacobiUpdate(a[c - 1], a[c + 1], a[c - ax], a[c + ax]);
}

}  // namespace haloex::stencil
