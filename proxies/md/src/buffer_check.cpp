#include "haloex/md/buffer_check.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "haloex/core/error.hpp"

namespace haloex::md {
namespace {

double minimumImage(double d, double L) { return d - L * std::round(d / L); }

double distance2(const Vec3d& a, const Vec3d& b, const plan::Box& box) {
    double r2 = 0.0;
    for (int d = 0; d < 3; ++d) {
        const double x = minimumImage(a[d] - b[d], box.length[d]);
        r2 += x * x;
    }
    return r2;
}

// The pairs within rc at `now` for which isMissed(i, j) holds, with their energies.
template <class Missed>
MissedPairs countMissedWithinCutoff(std::span<const Vec3d> now, std::span<const double> charges, const plan::Box& box,
                                    const ForceField& ff, Missed isMissed) {
    const int n = static_cast<int>(now.size());
    // Cell list over the current positions with cells of at least rc.
    int cells[3];
    double width[3];
    for (int d = 0; d < 3; ++d) {
        cells[d] = std::max(1, static_cast<int>(box.length[d] / ff.rc));
        width[d] = box.length[d] / cells[d];
    }
    const auto cellOf = [&](const Vec3d& x, int d) {
        const double w = x[d] - box.length[d] * std::floor(x[d] / box.length[d]);
        return std::min(cells[d] - 1, static_cast<int>(w / width[d]));
    };
    std::vector<std::vector<int>> bins(static_cast<std::size_t>(cells[0]) * cells[1] * cells[2]);
    std::vector<int> binOf(n);
    for (int i = 0; i < n; ++i) {
        const int b = cellOf(now[i], 0) + cells[0] * (cellOf(now[i], 1) + cells[1] * cellOf(now[i], 2));
        bins[b].push_back(i);
        binOf[i] = b;
    }
    const double rc2 = ff.rc * ff.rc;
    const double c6 = ff.c6(), c12 = ff.c12(), shift = ff.ljShift(), krf = ff.krf(), crf = ff.crf();
    MissedPairs missed;
    for (int i = 0; i < n; ++i) {
        const int b = binOf[i];
        const int bx = b % cells[0], by = (b / cells[0]) % cells[1], bz = b / (cells[0] * cells[1]);
        // Neighbour cells, each visited once even when the grid has fewer than 3 cells.
        std::vector<int> visited;
        for (int dz = -1; dz <= 1; ++dz)
            for (int dy = -1; dy <= 1; ++dy)
                for (int dx = -1; dx <= 1; ++dx) {
                    const int c =
                        (bx + dx + cells[0]) % cells[0] +
                        cells[0] * ((by + dy + cells[1]) % cells[1] + cells[1] * ((bz + dz + cells[2]) % cells[2]));
                    if (std::find(visited.begin(), visited.end(), c) != visited.end()) continue;
                    visited.push_back(c);
                    for (int j : bins[c]) {
                        if (j <= i) continue;
                        const double r2 = distance2(now[i], now[j], box);
                        if (r2 >= rc2 || !isMissed(i, j)) continue;
                        const double r = std::sqrt(r2);
                        const double r6 = r2 * r2 * r2;
                        const double v = c12 / (r6 * r6) - c6 / r6 - shift +
                                         kCoulombFactor * charges[i] * charges[j] * (1.0 / r + krf * r2 - crf);
                        ++missed.count;
                        missed.energy += v;
                        missed.absoluteEnergy += std::abs(v);
                    }
                }
    }
    return missed;
}

}  // namespace

MissedPairs countMissedPairs(std::span<const Vec3d> atBuild, std::span<const Vec3d> now,
                             std::span<const double> charges, const plan::Box& box, const ForceField& ff,
                             double rlist) {
    HALOEX_ASSERT(atBuild.size() == now.size() && now.size() == charges.size(), "one position pair per atom");
    const double rlist2 = rlist * rlist;
    return countMissedWithinCutoff(now, charges, box, ff,
                                   [&](int i, int j) { return distance2(atBuild[i], atBuild[j], box) >= rlist2; });
}

MissedPairs countMissedByPruning(std::span<const Vec3d> atBuild, std::span<const Vec3d> atPrune,
                                 std::span<const Vec3d> now, std::span<const double> charges, const plan::Box& box,
                                 const ForceField& ff, double rlist, double rlistInner) {
    HALOEX_ASSERT(atBuild.size() == now.size() && atPrune.size() == now.size() && now.size() == charges.size(),
                  "one position triple per atom");
    const double rlist2 = rlist * rlist, inner2 = rlistInner * rlistInner;
    return countMissedWithinCutoff(now, charges, box, ff, [&](int i, int j) {
        return distance2(atBuild[i], atBuild[j], box) < rlist2 && distance2(atPrune[i], atPrune[j], box) >= inner2;
    });
}

}  // namespace haloex::md
