#include "haloex/plan/decomposition.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "haloex/core/error.hpp"

namespace haloex::plan {
namespace {

constexpr const char* kDimName = "xyz";

void validateCutoffs(double rc, double rlist) {
    if (!std::isfinite(rc) || rc <= 0.0) {
        throwError(ErrorKind::InvalidInput, fmt::format("cutoff rc = {} nm: it must be a positive, finite number", rc));
    }
    if (!std::isfinite(rlist) || rlist <= 0.0) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("pair-list cutoff rlist = {} nm: it must be a positive, finite number", rlist));
    }
    if (rlist < rc) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("pair-list cutoff rlist = {} nm is below the interaction cutoff rc = {} nm; "
                               "rlist must be >= rc (it is rc plus the Verlet buffer)",
                               rlist, rc));
    }
}

void validateDimOrder(const std::array<int, 3>& order) {
    std::array<bool, 3> seen{false, false, false};
    for (int d : order) {
        if (d < 0 || d > 2 || seen[d]) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("pulse order {},{},{} is not a permutation of the dimensions 0 (x), 1 (y), 2 (z)",
                                   order[0], order[1], order[2]));
        }
        seen[d] = true;
    }
}

}  // namespace

int pulsesNeeded(double halo, double cellWidth) {
    HALOEX_ASSERT(halo > 0 && cellWidth > 0, "pulsesNeeded needs positive lengths");
    const double ratio = halo / cellWidth;
    if (ratio > 1e6) return std::numeric_limits<int>::max();
    int k = std::max(1, static_cast<int>(std::ceil(ratio)));
    // ceil() of a ratio that is an exact multiple can round one up.
    while (k > 1 && (k - 1) * cellWidth >= halo) --k;
    return k;
}

Decomposition::Decomposition(const DecompositionSpec& spec) : spec_(spec) {
    spec_.box.validate();
    validateCutoffs(spec_.rc, spec_.rlist);
    validateDimOrder(spec_.dimOrder);
    const auto& L = spec_.box.length;
    for (int d = 0; d < 3; ++d) {
        const int n = spec_.grid.dim(d);
        if (n == 1) {
            // The pair search takes the periodic image itself in this dimension.
            if (L[d] <= 2.0 * spec_.rlist) {
                throwError(ErrorKind::Plan,
                           fmt::format("dimension {} is not decomposed and its box length {:.4g} nm is not longer "
                                       "than 2 x rlist = {:.4g} nm, so an atom would see two images of another; use a "
                                       "larger box or a smaller rlist",
                                       kDimName[d], L[d], 2.0 * spec_.rlist));
            }
            continue;
        }
        if (L[d] <= 2.0 * spec_.rc) {
            throwError(ErrorKind::Plan,
                       fmt::format("box length along {} ({:.4g} nm) is not longer than 2 x rc = {:.4g} nm, so an atom "
                                   "would interact with two images of another; use a larger box or a smaller rc",
                                   kDimName[d], L[d], 2.0 * spec_.rc));
        }
        const double width = cellWidth(d);
        const int np = pulsesNeeded(spec_.rlist, width);
        if (np >= n) {
            throwError(
                ErrorKind::Plan,
                fmt::format("dimension {}: cells are {:.4g} nm wide, so the halo distance rlist = {:.4g} nm "
                            "needs {} pulse(s), but {} rank(s) along {} allow at most {} (an atom would meet its "
                            "own image); use fewer ranks along {} or a smaller rlist",
                            kDimName[d], width, spec_.rlist, np, n, kDimName[d], n - 1, kDimName[d]));
        }
        pulsesPerDim_[d] = np;
    }
    for (int d : spec_.dimOrder) {
        for (int k = 0; k < pulsesPerDim_[d]; ++k) pulseOrder_.push_back({d, k});
    }
}

double Decomposition::cellLo(int rank, int d) const {
    const int c = spec_.grid.coordOf(rank)[d];
    return spec_.box.length[d] * c / spec_.grid.dim(d);
}

double Decomposition::cellHi(int rank, int d) const {
    const int c = spec_.grid.coordOf(rank)[d];
    // The last cell ends exactly at the box face: L * n / n can round to one
    // ulp above or below L, which would misplace wrapped atoms near L and
    // images shifted by exactly L (the upper neighbour's atoms at 0).
    if (c + 1 == spec_.grid.dim(d)) return spec_.box.length[d];
    return spec_.box.length[d] * (c + 1) / spec_.grid.dim(d);
}

int Decomposition::ownerRank(const Vec3d& x) const {
    Int3 c{};
    for (int d = 0; d < 3; ++d) {
        const int n = spec_.grid.dim(d);
        const double L = spec_.box.length[d];
        int k = std::clamp(static_cast<int>(std::floor(x[d] * n / L)), 0, n - 1);
        // Agree exactly with cellLo/cellHi at the boundaries.
        while (k > 0 && x[d] < L * k / n) --k;
        while (k < n - 1 && x[d] >= L * (k + 1) / n) ++k;
        c[d] = k;
    }
    return spec_.grid.rankOf(c);
}

RankGrid chooseRankGrid(int numRanks, const Box& box, double rc, double rlist) {
    if (numRanks < 1) throwError(ErrorKind::InvalidInput, fmt::format("cannot decompose over {} ranks", numRanks));
    struct Candidate {
        Int3 dims;
        double haloVolume;
        int decomposedDims;
    };
    std::vector<Candidate> accepted;
    std::string lastReason;
    for (int nz = 1; nz <= numRanks; ++nz) {
        if (numRanks % nz) continue;
        for (int ny = 1; ny <= numRanks / nz; ++ny) {
            if ((numRanks / nz) % ny) continue;
            const int nx = numRanks / (ny * nz);
            DecompositionSpec spec{box, RankGrid({nx, ny, nz}), rc, rlist};
            try {
                Decomposition dd(spec);
                double cell = 1.0, withHalo = 1.0;
                int decomposed = 0;
                for (int d = 0; d < 3; ++d) {
                    cell *= dd.cellWidth(d);
                    withHalo *= dd.cellWidth(d) + (dd.grid().decomposed(d) ? rlist : 0.0);
                    decomposed += dd.grid().decomposed(d);
                }
                accepted.push_back({{nx, ny, nz}, withHalo - cell, decomposed});
            } catch (const Error& e) {
                lastReason = e.what();
            }
        }
    }
    if (accepted.empty()) {
        // One rank has one grid: fewer ranks is no way out.
        throwError(ErrorKind::Plan, fmt::format("no rank grid of {} rank(s) fits this box and rlist = {:.4g} nm (e.g.: "
                                                "{}); use {}a larger system",
                                                numRanks, rlist, lastReason, numRanks > 1 ? "fewer ranks or " : ""));
    }
    auto better = [](const Candidate& a, const Candidate& b) {
        const double tol = 1e-9 * std::max(a.haloVolume, b.haloVolume);
        if (std::abs(a.haloVolume - b.haloVolume) > tol) return a.haloVolume < b.haloVolume;
        if (a.decomposedDims != b.decomposedDims) return a.decomposedDims < b.decomposedDims;
        return a.dims > b.dims;  // prefer splitting x, then y
    };
    return RankGrid(std::min_element(accepted.begin(), accepted.end(), better)->dims);
}

}  // namespace haloex::plan
