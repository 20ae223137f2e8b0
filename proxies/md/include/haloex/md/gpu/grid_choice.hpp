#pragma once
// The choice of the two column grids (home, halo) from the atoms' bounds,
// computed identically by the CPU reference and by one GPU thread: the search
// step then grids its atoms without reading the bounds back to the host.
//
// Only IEEE basic operations (explicitly rounded on the device, no fused
// multiply-add) and integer logic, so both sides choose the same grids bit
// for bit. The cell size's cube root is a bisection for that reason: the
// host's and the device's cbrt may differ in the last bit.
#include "haloex/md/gpu/cluster_geometry.hpp"

namespace haloex::md::gpu {

// Axis-aligned bounds of a set of atoms (count 0: empty, lo/hi meaningless).
struct AtomBounds {
    Float3 lo{0.f, 0.f, 0.f};
    Float3 hi{0.f, 0.f, 0.f};
    int count = 0;
};

// The two column grids of one build, chosen from the home and halo bounds.
struct GridChoice {
    ColumnGrid home;
    ColumnGrid halo;
    HALOEX_HD int numColumns() const { return home.numColumns() + halo.numColumns(); }
};

namespace grid_math {
HALOEX_HD inline double add(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}
HALOEX_HD inline double sub(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dsub_rn(a, b);
#else
    return a - b;
#endif
}
HALOEX_HD inline double mul(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}
HALOEX_HD inline double div(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __ddiv_rn(a, b);
#else
    return a / b;
#endif
}
HALOEX_HD inline double maxd(double a, double b) { return a > b ? a : b; }
// Round half away from zero (v +- 0.5, truncated: std::lround but for the
// doubles just below 0.5, which it rounds up), for |v| < 2^62.
HALOEX_HD inline long long roundToInteger(double v) {
    const double t = v < 0.0 ? sub(v, 0.5) : add(v, 0.5);
    return static_cast<long long>(t);  // truncation toward zero
}
// The cube root of v > 0 by bisection on doubles (same steps on both sides).
HALOEX_HD inline double cubeRoot(double v) {
    double lo = 0.0, hi = maxd(1.0, v);
    for (int k = 0; k < 80; ++k) {
        const double mid = mul(add(lo, hi), 0.5);
        if (mul(mul(mid, mid), mid) < v) lo = mid;
        else hi = mid;
    }
    return mul(add(lo, hi), 0.5);
}
}  // namespace grid_math

// Column size of the grids: cubic clusters of 8 at the given number density.
HALOEX_HD inline float chooseColumnCellSize(double numberDensity) {
    return static_cast<float>(grid_math::cubeRoot(grid_math::div(kClusterSize, numberDensity)));
}

// Number density used to size the columns: atoms over their bounding box,
// extents floored at 0.5 nm so flat or tiny sets do not give absurd densities.
HALOEX_HD inline double estimateNumberDensity(int numAtoms, Float3 lo, Float3 hi) {
    using namespace grid_math;
    constexpr double kMinExtent = 0.5;  // nm
    const double volume = mul(mul(maxd(sub(hi.x, lo.x), kMinExtent), maxd(sub(hi.y, lo.y), kMinExtent)),
                              maxd(sub(hi.z, lo.z), kMinExtent));
    return div(numAtoms, volume);
}

// Grid over a bounding box (lo, hi) with square-ish columns of `cellSize`;
// at most maxColumns columns (coarsened evenly when needed).
HALOEX_HD inline ColumnGrid makeColumnGrid(Float3 lo, Float3 hi, float cellSize, int firstColumn, int maxColumns) {
    using namespace grid_math;
    ColumnGrid g;
    g.x0 = lo.x;
    g.y0 = lo.y;
    g.z0 = lo.z;
    g.z1 = hi.z;
    const double ex = maxd(sub(hi.x, lo.x), 0.0);
    const double ey = maxd(sub(hi.y, lo.y), 0.0);
    const auto cells = [cellSize](double extent) {
        const long long n = roundToInteger(div(extent, cellSize));
        return static_cast<int>(n < 1 ? 1 : (n > (1LL << 20) ? (1LL << 20) : n));
    };
    g.nx = cells(ex);
    g.ny = cells(ey);
    if (maxColumns < 1) maxColumns = 1;
    while (static_cast<long long>(g.nx) * g.ny > maxColumns) {
        if (g.nx >= g.ny) g.nx = (g.nx + 1) / 2;
        else g.ny = (g.ny + 1) / 2;
    }
    // A zero extent puts every atom into the one column of that dimension.
    g.invCellX = ex > 0.0 ? static_cast<float>(div(g.nx, ex)) : 0.f;
    g.invCellY = ey > 0.0 ? static_cast<float>(div(g.ny, ey)) : 0.f;
    g.firstColumn = firstColumn;
    return g;
}

// The density comes from the home atoms' bounding box (else the halo's, else
// 100/nm^3); an empty set gets one empty column at the origin; no grid gets
// more columns than atoms (sparse halo corners would only cost search time).
HALOEX_HD inline GridChoice chooseGrids(const AtomBounds& home, const AtomBounds& halo) {
    double density = 100.0;
    if (home.count > 0) density = estimateNumberDensity(home.count, home.lo, home.hi);
    else if (halo.count > 0) density = estimateNumberDensity(halo.count, halo.lo, halo.hi);
    const float cell = chooseColumnCellSize(density);
    const auto grid = [cell](const AtomBounds& b, int first) {
        if (b.count == 0) return makeColumnGrid({0.f, 0.f, 0.f}, {0.f, 0.f, 0.f}, cell, first, 1);
        return makeColumnGrid(b.lo, b.hi, cell, first, b.count > 1 ? b.count : 1);
    };
    GridChoice choice;
    choice.home = grid(home, 0);
    choice.halo = grid(halo, choice.home.numColumns());
    // Sort keys: the column in the top bits (2^columnBits > columns, so no
    // real key is kNoAtomKey), z in the rest, at most 24 bits (a float's).
    int columnBits = 1;
    while ((1LL << columnBits) <= choice.numColumns()) ++columnBits;
    const int zBits = 32 - columnBits < 24 ? 32 - columnBits : 24;
    const auto quantiseZ = [zBits](ColumnGrid& g) {
        g.zBits = zBits;
        const double extent = grid_math::sub(g.z1, g.z0);
        g.zScale = extent > 0.0 ? static_cast<float>(grid_math::div((1u << zBits) - 1u, extent)) : 0.f;
    };
    quantiseZ(choice.home);
    quantiseZ(choice.halo);
    return choice;
}

}  // namespace haloex::md::gpu
