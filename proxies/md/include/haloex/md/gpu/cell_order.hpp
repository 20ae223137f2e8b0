#pragma once
// The order of a rank's home atoms in the pair search's home grid
// (docs/md-engine.md, "Atoms in cell order"): by the column of the grid the
// next build chooses for them (it depends on the home atoms alone), then by
// z. Home atoms stored in this order before a search come out of the build's
// sort -- by column, quantised z, then index -- where they are, so each
// permutation between atom and cluster order (the gather of positions, the
// scatter of forces, the fused update) reads and writes in long runs, and a
// halo pulse's index map, built after it, walks whole columns.
#include <cuda_runtime.h>

#include <memory>

#include "haloex/core/vec3.hpp"

namespace haloex::md::gpu {

class CellOrder {
public:
    CellOrder();
    ~CellOrder();
    CellOrder(const CellOrder&) = delete;
    CellOrder& operator=(const CellOrder&) = delete;

    // order[i] for i < n: the atom (an index into x) that goes to place i;
    // device memory, valid until the next call. Enqueued on `stream` with no
    // host synchronisation (an allocation only when n outgrows every earlier
    // call). Ties (equal column and z) keep index order. When any position is
    // not finite the order is the identity, so that checks made before it
    // still name the right atom by its index.
    const int* compute(const Vec3f* x, int n, cudaStream_t stream);

    // How many times compute() captured its graph: once, plus once per change
    // of the positions' array, a buffer's growth or the sort; the radix sort
    // (above 100 000 atoms) also per change of the count. The sort by
    // columns serves every count up to its capacity with one graph.
    int graphCaptures() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace haloex::md::gpu
