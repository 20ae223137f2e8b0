// Grid choice and the kernel constants: decisions shared by the GPU build and
// its CPU reference, so both produce identical layouts.
#include <algorithm>
#include <bit>
#include <cmath>
#include <fmt/format.h>

#include "haloex/core/error.hpp"
#include "haloex/md/gpu/cluster_reference.hpp"

namespace haloex::md::gpu {

float chooseColumnCellSize(double numberDensity) {
    // Cubic clusters: 8 atoms per cell volume.
    return static_cast<float>(std::cbrt(kClusterSize / numberDensity));
}

double estimateNumberDensity(int numAtoms, Float3 lo, Float3 hi) {
    constexpr double kMinExtent = 0.5;  // nm
    const double volume = std::max(static_cast<double>(hi.x) - lo.x, kMinExtent) *
                          std::max(static_cast<double>(hi.y) - lo.y, kMinExtent) *
                          std::max(static_cast<double>(hi.z) - lo.z, kMinExtent);
    return numAtoms / volume;
}

ColumnGrid makeColumnGrid(Float3 lo, Float3 hi, float cellSize, int firstColumn, int maxColumns) {
    ColumnGrid g;
    g.x0 = lo.x;
    g.y0 = lo.y;
    g.z0 = lo.z;
    g.z1 = hi.z;
    const double ex = std::max(static_cast<double>(hi.x) - lo.x, 0.0);
    const double ey = std::max(static_cast<double>(hi.y) - lo.y, 0.0);
    const auto cells = [&](double extent) {
        return static_cast<int>(std::clamp(std::lround(extent / cellSize), 1L, 1L << 20));
    };
    g.nx = cells(ex);
    g.ny = cells(ey);
    maxColumns = std::max(maxColumns, 1);
    while (static_cast<long>(g.nx) * g.ny > maxColumns) {
        if (g.nx >= g.ny) g.nx = (g.nx + 1) / 2;
        else g.ny = (g.ny + 1) / 2;
    }
    // A zero extent puts every atom into the one column of that dimension.
    g.invCellX = ex > 0.0 ? static_cast<float>(g.nx / ex) : 0.f;
    g.invCellY = ey > 0.0 ? static_cast<float>(g.ny / ey) : 0.f;
    g.firstColumn = firstColumn;
    return g;
}

GridChoice chooseGrids(const AtomBounds& home, const AtomBounds& halo) {
    double density = 100.0;
    if (home.count > 0) density = estimateNumberDensity(home.count, home.lo, home.hi);
    else if (halo.count > 0) density = estimateNumberDensity(halo.count, halo.lo, halo.hi);
    const float cell = chooseColumnCellSize(density);
    GridChoice choice;
    // An empty set gets one empty column at the origin.
    const auto grid = [&](const AtomBounds& b, int first) {
        if (b.count == 0) return makeColumnGrid({0.f, 0.f, 0.f}, {0.f, 0.f, 0.f}, cell, first, 1);
        // More columns than atoms would only cost search time (sparse halo corners).
        return makeColumnGrid(b.lo, b.hi, cell, first, std::max(1, b.count));
    };
    choice.home = grid(home, 0);
    choice.halo = grid(halo, choice.home.numColumns());
    return choice;
}

void validateSearchSettings(const SearchSettings& settings, const char* where) {
    settings.box.validate();
    if (!(settings.rlist > 0.0) || !std::isfinite(settings.rlist)) {
        throwError(ErrorKind::InvalidInput, fmt::format("{}: rlist = {} nm must be positive", where, settings.rlist));
    }
    if (settings.maxJClustersPerEntry < 1) {
        throwError(ErrorKind::InvalidInput, fmt::format("{}: maxJClustersPerEntry = {} must be at least 1", where,
                                                        settings.maxJClustersPerEntry));
    }
    for (int d = 0; d < 3; ++d) {
        if (settings.periodic[d] && !(settings.box.length[d] > 2.0 * settings.rlist)) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("{}: the box length along {} ({} nm) must exceed 2 rlist = {} nm in a periodic "
                                   "(undecomposed) dimension; use a larger system, a smaller rlist or decompose "
                                   "that dimension",
                                   where, "xyz"[d], settings.box.length[d], 2.0 * settings.rlist));
        }
    }
}

float rlistSquared(double rlist) { return static_cast<float>(rlist * rlist); }

float columnSearchRadius(double rlist) { return static_cast<float>(rlist * (1.0 + 1e-5) + 1e-5); }

Float3 boxLengthsF(const plan::Box& box) {
    return {static_cast<float>(box.length.x), static_cast<float>(box.length.y), static_cast<float>(box.length.z)};
}

PairConstants makePairConstants(const ForceField& ff) {
    PairConstants c{};
    c.rc2 = static_cast<float>(ff.rc * ff.rc);
    c.c6 = static_cast<float>(ff.c6());
    c.c12 = static_cast<float>(ff.c12());
    c.c6x6 = static_cast<float>(6.0 * ff.c6());
    c.c12x12 = static_cast<float>(12.0 * ff.c12());
    c.ljShift = static_cast<float>(ff.ljShift());
    c.krf = static_cast<float>(ff.krf());
    c.twoKrf = static_cast<float>(2.0 * ff.krf());
    c.crf = static_cast<float>(ff.crf());
    c.sqrtCoulomb = static_cast<float>(std::sqrt(kCoulombFactor));
    return c;
}

std::int64_t PairListHost::atomPairs() const {
    std::int64_t n = 0;
    for (const ClusterPair& p : pairs) n += std::popcount(p.maskLo) + std::popcount(p.maskHi);
    return n;
}

}  // namespace haloex::md::gpu
