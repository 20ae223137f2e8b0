#include "haloex/md/force_oracle.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "haloex/core/error.hpp"

namespace haloex::md {

namespace {

constexpr const char* kAxisNames = "xyz";

// A cell grid over the atoms that take part. Cells are at least rc wide, so
// every pair within rc lies in the same or adjacent cells. Periodic dims span
// the box; the others span the atoms' bounding box (halo atoms lie beyond the
// box faces along decomposed dimensions).
struct CellGrid {
    std::array<int, 3> numCells{1, 1, 1};
    std::array<double, 3> origin{0.0, 0.0, 0.0};
    std::array<double, 3> cellSize{1.0, 1.0, 1.0};
    std::array<bool, 3> periodic{true, true, true};
    std::array<double, 3> boxLength{1.0, 1.0, 1.0};

    int total() const { return numCells[0] * numCells[1] * numCells[2]; }
    int flatten(int cx, int cy, int cz) const { return cx + numCells[0] * (cy + numCells[1] * cz); }

    int cellAlong(int d, double x) const {
        double offset = x - origin[d];
        if (periodic[d]) offset -= boxLength[d] * std::floor(offset / boxLength[d]);
        const double index = std::floor(offset / cellSize[d]);
        return static_cast<int>(std::clamp(index, 0.0, static_cast<double>(numCells[d] - 1)));
    }
};

template <class T>
CellGrid makeCellGrid(std::span<const Vec3<T>> x, std::span<const int> active, const plan::Box& box,
                      std::array<bool, 3> periodic, double rc) {
    CellGrid grid;
    grid.periodic = periodic;
    std::array<double, 3> extent{};
    for (int d = 0; d < 3; ++d) {
        grid.boxLength[d] = box.length[d];
        extent[d] = box.length[d];
        if (!periodic[d] && !active.empty()) {
            double lo = static_cast<double>(x[active.front()][d]);
            double hi = lo;
            for (int i : active) {
                lo = std::min(lo, static_cast<double>(x[i][d]));
                hi = std::max(hi, static_cast<double>(x[i][d]));
            }
            grid.origin[d] = lo;
            extent[d] = hi - lo;
        }
        int n = static_cast<int>(std::min(std::floor(extent[d] / rc), 1.0e6));
        while (n > 1 && extent[d] / n < rc) --n;  // rounding must not make a cell narrower than rc
        grid.numCells[d] = std::max(n, 1);
    }
    // Far more cells than atoms only costs time (a huge, sparse box): coarsen.
    const double maxCells = std::max(64.0, 2.0 * static_cast<double>(active.size()));
    while (static_cast<double>(grid.numCells[0]) * grid.numCells[1] * grid.numCells[2] > maxCells) {
        auto widest = std::max_element(grid.numCells.begin(), grid.numCells.end());
        *widest = (*widest + 1) / 2;
    }
    for (int d = 0; d < 3; ++d) {
        // One cell: any positive size works, indices clamp to 0.
        grid.cellSize[d] = grid.numCells[d] > 1 ? extent[d] / grid.numCells[d] : std::max(extent[d], rc);
    }
    return grid;
}

// The distinct cells adjacent to (or equal to) cell (cx, cy, cz) with a flat
// index >= its own, so each pair of cells is visited once. With fewer than 3
// cells along a periodic dim the offsets -1 and +1 reach the same cell:
// duplicates are dropped.
int upperNeighbourCells(const CellGrid& grid, int cx, int cy, int cz, std::array<int, 27>& out) {
    const int self = grid.flatten(cx, cy, cz);
    const std::array<int, 3> c{cx, cy, cz};
    int count = 0;
    for (int oz = -1; oz <= 1; ++oz) {
        for (int oy = -1; oy <= 1; ++oy) {
            for (int ox = -1; ox <= 1; ++ox) {
                const std::array<int, 3> offset{ox, oy, oz};
                std::array<int, 3> n{};
                bool inside = true;
                for (int d = 0; d < 3; ++d) {
                    n[d] = c[d] + offset[d];
                    if (grid.periodic[d]) {
                        n[d] = (n[d] + grid.numCells[d]) % grid.numCells[d];
                    } else if (n[d] < 0 || n[d] >= grid.numCells[d]) {
                        inside = false;
                    }
                }
                if (!inside) continue;
                const int flat = grid.flatten(n[0], n[1], n[2]);
                if (flat < self || std::find(out.begin(), out.begin() + count, flat) != out.begin() + count) continue;
                out[count++] = flat;
            }
        }
    }
    return count;
}

void checkInputs(std::size_t numPositions, std::size_t numCharges, std::size_t numMasks, bool haveMasks,
                 const plan::Box& box, std::array<bool, 3> periodic, const ForceField& ff) {
    box.validate();
    if (numCharges != numPositions || (haveMasks && numMasks != numPositions)) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("force oracle: {} positions but {} charges{}; give one entry per atom", numPositions,
                               numCharges, haveMasks ? fmt::format(" and {} zone masks", numMasks) : ""));
    }
    if (!std::isfinite(ff.rc) || ff.rc <= 0.0) {
        throwError(ErrorKind::InvalidInput, fmt::format("force oracle: cutoff rc = {} nm must be positive", ff.rc));
    }
    for (int d = 0; d < 3; ++d) {
        if (periodic[d] && !(box.length[d] > 2.0 * ff.rc)) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("force oracle: the box length along {} ({} nm) must exceed twice the cutoff "
                                   "(2 x {} nm) in a periodic dimension, or an atom would meet two images of "
                                   "another; use a larger system",
                                   kAxisNames[d], box.length[d], ff.rc));
        }
    }
}

// Shared by both entry points; masks may be empty (all atoms are home atoms).
template <class T>
PairForces<T> computePairs(std::span<const Vec3<T>> x, std::span<const T> charges,
                           std::span<const plan::ZoneMask> masks, bool haveMasks, const plan::Box& box,
                           std::array<bool, 3> periodic, const ForceField& ff) {
    checkInputs(x.size(), charges.size(), masks.size(), haveMasks, box, periodic, ff);
    const int n = static_cast<int>(x.size());

    // Padding atoms hold NaN positions: leave them out before any arithmetic.
    std::vector<int> active;
    active.reserve(x.size());
    for (int i = 0; i < n; ++i) {
        if (haveMasks && (masks[i] & plan::kPaddingMask) != 0) continue;
        if (!isFinite(x[i])) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("force oracle: atom {} has a non-finite position ({}, {}, {}); only padding atoms "
                                   "(zone mask kPaddingMask) may",
                                   i, x[i].x, x[i].y, x[i].z));
        }
        active.push_back(i);
    }

    const CellGrid grid = makeCellGrid(x, std::span<const int>(active), box, periodic, ff.rc);

    // Counting sort of the atoms by cell; per-cell data contiguous for the pair loops.
    const int numCells = grid.total();
    std::vector<int> cellOfAtom(active.size());
    std::vector<int> cellStart(static_cast<std::size_t>(numCells) + 1, 0);
    for (std::size_t k = 0; k < active.size(); ++k) {
        const Vec3<T>& p = x[active[k]];
        cellOfAtom[k] = grid.flatten(grid.cellAlong(0, p.x), grid.cellAlong(1, p.y), grid.cellAlong(2, p.z));
        ++cellStart[cellOfAtom[k] + 1];
    }
    for (int c = 0; c < numCells; ++c) cellStart[c + 1] += cellStart[c];
    const std::size_t numActive = active.size();
    std::vector<int> original(numActive);
    std::vector<Vec3<T>> pos(numActive);
    std::vector<T> q(numActive);
    std::vector<plan::ZoneMask> mask(numActive, 0);
    {
        std::vector<int> fill(cellStart.begin(), cellStart.end() - 1);
        for (std::size_t k = 0; k < numActive; ++k) {
            const int slot = fill[cellOfAtom[k]]++;
            const int i = active[k];
            original[slot] = i;
            pos[slot] = x[i];
            q[slot] = charges[i];
            if (haveMasks) mask[slot] = masks[i];
        }
    }
    std::vector<Vec3<T>> force(numActive);

    const T rc2 = static_cast<T>(ff.rc * ff.rc);
    const T c6 = static_cast<T>(ff.c6());
    const T c12 = static_cast<T>(ff.c12());
    const T ljShift = static_cast<T>(ff.ljShift());
    const T krf = static_cast<T>(ff.krf());
    const T crf = static_cast<T>(ff.crf());
    const T coulomb = static_cast<T>(kCoulombFactor);
    Vec3<T> length{}, inverseLength{};
    for (int d = 0; d < 3; ++d) {
        length[d] = static_cast<T>(box.length[d]);
        inverseLength[d] = static_cast<T>(1.0 / box.length[d]);
    }

    PairForces<T> result;
    double lj = 0.0, coul = 0.0, virial = 0.0;
    std::int64_t pairs = 0;
    const auto interact = [&](int i, int j) {
        if (!plan::zonePairComputed(mask[i], mask[j])) return;
        Vec3<T> dx = pos[i] - pos[j];
        for (int d = 0; d < 3; ++d) {
            if (periodic[d]) dx[d] -= length[d] * std::nearbyint(dx[d] * inverseLength[d]);  // minimum image
        }
        const T r2 = norm2(dx);
        if (!(r2 < rc2)) return;
        const T rinv = T(1) / std::sqrt(r2);
        const T rinv2 = rinv * rinv;
        const T rinv6 = rinv2 * rinv2 * rinv2;
        const T qq = coulomb * q[i] * q[j];
        const T vlj = c12 * rinv6 * rinv6 - c6 * rinv6 - ljShift;
        const T vcoul = qq * (rinv + krf * r2 - crf);
        // |F|/r for F = -dV/dr along dx.
        const T fscal = (T(12) * c12 * rinv6 * rinv6 - T(6) * c6 * rinv6) * rinv2 + qq * (rinv * rinv2 - T(2) * krf);
        const Vec3<T> f = dx * fscal;
        force[i] += f;
        force[j] -= f;
        lj += static_cast<double>(vlj);
        coul += static_cast<double>(vcoul);
        virial -= 0.5 * static_cast<double>(fscal) * static_cast<double>(r2);
        ++pairs;
    };

    std::array<int, 27> neighbours{};
    for (int cz = 0; cz < grid.numCells[2]; ++cz) {
        for (int cy = 0; cy < grid.numCells[1]; ++cy) {
            for (int cx = 0; cx < grid.numCells[0]; ++cx) {
                const int self = grid.flatten(cx, cy, cz);
                const int numNeighbours = upperNeighbourCells(grid, cx, cy, cz, neighbours);
                for (int k = 0; k < numNeighbours; ++k) {
                    const int other = neighbours[k];
                    for (int i = cellStart[self]; i < cellStart[self + 1]; ++i) {
                        const int jBegin = other == self ? i + 1 : cellStart[other];
                        for (int j = jBegin; j < cellStart[other + 1]; ++j) interact(i, j);
                    }
                }
            }
        }
    }

    result.forces.assign(x.size(), Vec3<T>{});
    for (std::size_t k = 0; k < numActive; ++k) result.forces[original[k]] = force[k];
    result.ljEnergy = lj;
    result.coulombEnergy = coul;
    result.virial = virial;
    result.pairsWithinCutoff = pairs;
    return result;
}

}  // namespace

template <class T>
PairForces<T> computeForcesSingleDomain(std::span<const Vec3<T>> positions, std::span<const T> charges,
                                        const plan::Box& box, const ForceField& ff) {
    return computePairs<T>(positions, charges, {}, false, box, {true, true, true}, ff);
}

template <class T>
PairForces<T> computeForcesRank(std::span<const Vec3<T>> localPositions, std::span<const T> charges,
                                std::span<const plan::ZoneMask> zoneMask, const plan::Box& box,
                                std::array<bool, 3> periodic, const ForceField& ff) {
    return computePairs<T>(localPositions, charges, zoneMask, true, box, periodic, ff);
}

double coulombSelfEnergy(std::span<const double> charges, const ForceField& ff) {
    double sum = 0.0;
    for (double q : charges) sum += ff.selfEnergy(q);
    return sum;
}

template PairForces<float> computeForcesSingleDomain<float>(std::span<const Vec3<float>>, std::span<const float>,
                                                            const plan::Box&, const ForceField&);
template PairForces<double> computeForcesSingleDomain<double>(std::span<const Vec3<double>>, std::span<const double>,
                                                              const plan::Box&, const ForceField&);
template PairForces<float> computeForcesRank<float>(std::span<const Vec3<float>>, std::span<const float>,
                                                    std::span<const plan::ZoneMask>, const plan::Box&,
                                                    std::array<bool, 3>, const ForceField&);
template PairForces<double> computeForcesRank<double>(std::span<const Vec3<double>>, std::span<const double>,
                                                      std::span<const plan::ZoneMask>, const plan::Box&,
                                                      std::array<bool, 3>, const ForceField&);

}  // namespace haloex::md
