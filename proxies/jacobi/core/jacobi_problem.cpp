#include "jacobi_problem.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <limits>

#include "haloex/core/error.hpp"

namespace haloex::jacobi {

Boundary parseBoundary(std::string_view text) {
    if (text == "periodic") return Boundary::Periodic;
    if (text == "fixed") return Boundary::Fixed;
    throwError(ErrorKind::InvalidInput, fmt::format("--boundary '{}': use periodic or fixed", text));
}

const char* toString(Boundary b) { return b == Boundary::Periodic ? "periodic" : "fixed"; }

std::string ProblemSpec::gridString() const { return fmt::format("{}x{}", px, py); }

namespace {

void checkSize(int n, const char* name) {
    if (n < 2) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{} {}: the grid needs at least 2 cells along each dimension", name, n));
    }
}

}  // namespace

void chooseProcessGrid(ProblemSpec& spec, std::string_view decomposition, int ranks) {
    if (ranks < 1) throwError(ErrorKind::InvalidInput, fmt::format("{} ranks: need at least one", ranks));
    if (decomposition == "row") {
        spec.px = 1;
        spec.py = ranks;
        return;
    }
    if (decomposition == "2d") {
        // Shortest halo per rank (perimeter of a block) among the grids that
        // divide both sizes; ties go to more ranks along y (longer rows).
        long long best = LLONG_MAX;
        int bestPx = 0;
        for (int px = 1; px <= ranks; ++px) {
            if (ranks % px != 0) continue;
            const int py = ranks / px;
            if (spec.nx % px != 0 || spec.ny % py != 0) continue;
            const long long perimeter = static_cast<long long>(spec.nx / px) + spec.ny / py;
            if (perimeter < best) {
                best = perimeter;
                bestPx = px;
            }
        }
        if (bestPx == 0) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("--decomp 2d: no grid of {} ranks divides the {} x {} cells evenly; choose sizes "
                                   "divisible by the ranks along each dimension, or give --decomp PXxPY",
                                   ranks, spec.nx, spec.ny));
        }
        spec.px = bestPx;
        spec.py = ranks / bestPx;
        return;
    }
    const plan::RankGrid grid = plan::parseRankGrid(decomposition);
    if (grid.dim(2) != 1) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--decomp '{}': the Jacobi grid is 2D, give PXxPY", decomposition));
    }
    spec.px = grid.dim(0);
    spec.py = grid.dim(1);
}

void validate(const ProblemSpec& spec, int worldSize) {
    checkSize(spec.nx, "--nx");
    checkSize(spec.ny, "--ny");
    if (spec.niter < 1) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--niter {}: at least one iteration is needed (the result is checked after the "
                               "last one)",
                               spec.niter));
    }
    if (spec.nccheck < 0) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--nccheck {}: use 0 (only at the end) or a positive period", spec.nccheck));
    }
    if (spec.px < 1 || spec.py < 1) {
        throwError(ErrorKind::InvalidInput, fmt::format("process grid {}: need at least one rank along each "
                                                        "dimension",
                                                        spec.gridString()));
    }
    if (spec.ranks() != worldSize) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("process grid {} has {} ranks but the job has {}; launch {} ranks or change --decomp",
                               spec.gridString(), spec.ranks(), worldSize, spec.ranks()));
    }
    const struct {
        int cells, ranks;
        const char *option, *dim, *what;
    } dims[] = {{spec.nx, spec.px, "--nx", "x", "columns"}, {spec.ny, spec.py, "--ny", "y", "rows"}};
    for (const auto& d : dims) {
        if (d.ranks > d.cells) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("too many ranks for the grid: {} ranks along {} but only {} {} ({} {}); use at "
                                   "most {} ranks along {} or a larger {}",
                                   d.ranks, d.dim, d.cells, d.what, d.option, d.cells, d.cells, d.dim, d.option));
        }
        if (d.cells % d.ranks != 0) {
            const int lower = d.cells / d.ranks * d.ranks;
            throwError(ErrorKind::InvalidInput,
                       fmt::format("{} {} is not divisible by the {} ranks along {} (process grid {}): every rank "
                                   "needs the same block; use a multiple of {} such as {} or {}",
                                   d.option, d.cells, d.ranks, d.dim, spec.gridString(), d.ranks, lower,
                                   lower + d.ranks));
        }
    }
    const long long localCells =
        static_cast<long long>(spec.localNx() + 2) * static_cast<long long>(spec.localNy() + 2);
    if (localCells > std::numeric_limits<int>::max()) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("each rank's block of {} x {} cells (with halo: {} cells) exceeds 2^31 cells; use "
                               "more ranks or a smaller grid",
                               spec.localNx(), spec.localNy(), localCells));
    }
}

plan::GridSpec gridSpec(const ProblemSpec& spec) {
    plan::GridSpec g;
    g.cells = {spec.nx, spec.ny, 1};
    g.grid = plan::RankGrid({spec.px, spec.py, 1});
    g.haloWidth = 1;
    const bool periodic = spec.boundary == Boundary::Periodic;
    g.periodic = {periodic, periodic, false};
    g.dimOrder = {2, 1, 0};
    // A 5-point stencil reads no corner cell: faces only, so all four pulses
    // are independent and the halo API moves them in one batch.
    g.edgesAndCorners = false;
    return g;
}

}  // namespace haloex::jacobi
