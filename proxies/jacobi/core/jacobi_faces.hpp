#pragma once
// From the structured-grid plan to the stencil's face messages
// (haloex/stencil/jacobi_layout.hpp): each pulse keeps the entries that are
// the sender's interior cells (the face), the corners are dropped (forwarded
// halo cells, or fixed boundary values: a 5-point stencil never reads them),
// and the index lists become strided lines. Pure C++; throws Internal if the
// plan is not line-shaped.
#include "haloex/plan/grid_plan.hpp"
#include "haloex/stencil/jacobi_layout.hpp"

namespace haloex::jacobi {

stencil::LocalStencil buildLocalStencil(const plan::GridHaloPlan& plan);

// Where a face line's cells lie among its pulse's send indices: the first of
// `line.count` consecutive entries sendIndices[first + k] == line.at(k) (the
// pack hook's slots: GridHalo::bindPackedSends). Throws Internal if the line
// is not such a run of the pulse's sends.
int sendSlotOf(const plan::Pulse& pulse, const stencil::Line& line);

// A list of local indices as a strided line; throws Internal (naming `what`)
// when the indices are not equally spaced.
stencil::Line toLine(const std::vector<int>& indices, const char* what);

}  // namespace haloex::jacobi
