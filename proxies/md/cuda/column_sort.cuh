#pragma once
// The sort of one grid column's atoms by one block, shared by the grid build
// (grid_build.cu) and the cell order (cell_order.cu): each atom is a 64-bit
// word, its z key above its index, so words are distinct and their order is
// that of a stable sort by z key. A few hundred atoms per column at most in
// practice, so a bitonic sort in shared memory beats a global radix sort's
// passes over every atom.
#include <cstdint>

#include "haloex/detail/core/environment_switch.hpp"

namespace haloex::md::gpu::detail {

// Whether `atoms` atoms sort faster by columns than by CUB's global radix
// sort: measured on an H200 (docs/md-engine.md), 32 against 58 us at 22 500
// atoms, 110 against 80 at 720 000, where the radix sort's passes are
// bandwidth-bound and the buckets' scattered writes are not. The grid build
// and the cell order both choose by it; HALOEX_COLUMN_SORT=0/1 forces one
// way (tests).
constexpr int kColumnSortMaxAtoms = 100000;  // the refusal's text below says it too
inline bool columnSortPays(int atoms) {
    return ::haloex::detail::environmentSwitch("HALOEX_COLUMN_SORT", atoms <= kColumnSortMaxAtoms,
                                               "the sort by columns forced on or off, for tests",
                                               "1 up to 100000 atoms, 0 above");
}

constexpr int kColumnSortThreads = 256;
constexpr int kColumnSortMax = 2048;  // words a block sorts in shared memory (16 KiB)

// Writes the indices (low 32 bits) of column[0, n) in word order to out[0, n);
// n <= kColumnSortMax. `words` is the block's shared array of kColumnSortMax.
// Every thread of the block calls it (it synchronises).
__device__ inline void sortColumnInShared(const std::uint64_t* __restrict__ column, int n,
                                          std::uint64_t* __restrict__ words, int* __restrict__ out) {
    int size = 1;
    while (size < n) size <<= 1;
    for (int k = threadIdx.x; k < size; k += blockDim.x) words[k] = k < n ? column[k] : ~std::uint64_t{0};
    __syncthreads();
    for (int span = 2; span <= size; span <<= 1) {
        for (int stride = span / 2; stride > 0; stride >>= 1) {
            for (int t = threadIdx.x; t < size / 2; t += blockDim.x) {
                const int a = 2 * stride * (t / stride) + t % stride;
                const int b = a + stride;
                const bool ascending = (a & span) == 0;
                const std::uint64_t wa = words[a], wb = words[b];
                if ((wa > wb) == ascending) {
                    words[a] = wb;
                    words[b] = wa;
                }
            }
            __syncthreads();
        }
    }
    for (int k = threadIdx.x; k < n; k += blockDim.x) out[k] = static_cast<int>(words[k] & 0xffffffffu);
    __syncthreads();  // `words` may be reused by the caller's next column
}

// The same order for a column of any length, in quadratic time: each word's
// place is the number of smaller words (they are distinct). For the rare
// column past kColumnSortMax, where there is no global sort to fall back on.
__device__ inline void sortColumnByRank(const std::uint64_t* __restrict__ column, int n, int* __restrict__ out) {
    for (int k = threadIdx.x; k < n; k += blockDim.x) {
        const std::uint64_t w = column[k];
        int place = 0;
        for (int j = 0; j < n; ++j) place += column[j] < w ? 1 : 0;
        out[place] = static_cast<int>(w & 0xffffffffu);
    }
}

}  // namespace haloex::md::gpu::detail
