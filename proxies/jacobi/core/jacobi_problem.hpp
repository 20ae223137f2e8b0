#pragma once
// The Jacobi problem as the user states it, checked, and its mapping onto the
// structured-grid plan.
#include <string>
#include <string_view>

#include "haloex/plan/grid_plan.hpp"

namespace haloex::jacobi {

enum class Boundary { Periodic, Fixed };

Boundary parseBoundary(std::string_view text);  // "periodic" | "fixed"; throws InvalidInput
const char* toString(Boundary b);

struct ProblemSpec {
    int nx = 0, ny = 0;  // global interior cells
    int px = 1, py = 1;  // ranks along x and y
    Boundary boundary = Boundary::Periodic;
    int niter = 0;    // timed iterations
    int nccheck = 0;  // reduce the residual norm across ranks every n iterations (0: only after the last)

    int ranks() const { return px * py; }
    int localNx() const { return nx / px; }
    int localNy() const { return ny / py; }
    std::string gridString() const;  // "PXxPY"
};

// The process grid for `ranks` ranks: "row" (1 x ranks: each rank a band of
// whole rows), "2d" (the factorisation with the shortest halo per rank that
// divides both sizes), or "PXxPY". Throws InvalidInput naming what is wrong.
void chooseProcessGrid(ProblemSpec& spec, std::string_view decomposition, int ranks);

// Throws InvalidInput with what to change: sizes below 2 or not divisible by
// the ranks along their dimension, more ranks than cells along a dimension,
// zero or negative iterations, a grid that does not match the job's ranks,
// blocks too large for 32-bit local indices.
void validate(const ProblemSpec& spec, int worldSize);

// The structured-grid plan's input for this problem (halo width 1, 2D, faces
// only: the stencil reads no corner).
plan::GridSpec gridSpec(const ProblemSpec& spec);

}  // namespace haloex::jacobi
