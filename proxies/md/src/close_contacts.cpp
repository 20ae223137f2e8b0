#include "haloex/md/close_contacts.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <vector>

#include "haloex/core/error.hpp"

namespace haloex::md {

std::optional<CloseContact> closestContact(const System& system, double within) {
    system.validate();
    const int n = system.size();
    if (n < 2 || !(within > 0.0)) return std::nullopt;
    const auto& length = system.box.length;
    // Cells at least `within` wide (every close pair lies in the same or
    // adjacent cells) and about as many as atoms (a sparse grid costs time).
    const double volume = length[0] * length[1] * length[2];
    const double edge = std::max(within, std::cbrt(volume / n));
    std::array<int, 3> cells{};
    for (int d = 0; d < 3; ++d) cells[d] = std::max(1, static_cast<int>(std::min(1e4, std::floor(length[d] / edge))));
    const auto cellAlong = [&](int d, double x) {
        double wrapped = x - length[d] * std::floor(x / length[d]);
        int c = static_cast<int>(wrapped / length[d] * cells[d]);
        return std::clamp(c, 0, cells[d] - 1);
    };
    const auto flatten = [&](int x, int y, int z) { return x + cells[0] * (y + cells[1] * z); };
    const std::size_t numCells = static_cast<std::size_t>(cells[0]) * cells[1] * cells[2];

    // Counting sort of the atoms by cell.
    std::vector<int> cellOf(n);
    std::vector<int> start(numCells + 1, 0);
    for (int i = 0; i < n; ++i) {
        const Vec3d& p = system.positions[i];
        cellOf[i] = flatten(cellAlong(0, p.x), cellAlong(1, p.y), cellAlong(2, p.z));
        ++start[cellOf[i] + 1];
    }
    for (std::size_t c = 0; c < numCells; ++c) start[c + 1] += start[c];
    std::vector<int> sorted(n);
    {
        std::vector<int> fill(start.begin(), start.end() - 1);
        for (int i = 0; i < n; ++i) sorted[fill[cellOf[i]]++] = i;
    }

    std::optional<CloseContact> best;
    const double within2 = within * within;
    const auto consider = [&](int i, int j) {
        Vec3d dx = system.positions[i] - system.positions[j];
        for (int d = 0; d < 3; ++d) dx[d] -= length[d] * std::nearbyint(dx[d] / length[d]);
        const double r2 = norm2(dx);
        if (!(r2 < within2)) return;
        std::int64_t a = system.globalIds[i], b = system.globalIds[j];
        if (a > b) std::swap(a, b);
        const double r = std::sqrt(r2);
        const std::int64_t pairs = best ? best->pairs + 1 : 1;
        const bool closer = !best || r < best->distance ||
                            (r == best->distance && std::make_pair(a, b) < std::make_pair(best->first, best->second));
        if (closer) {
            best = CloseContact{a, b, r, pairs};
        } else {
            best->pairs = pairs;
        }
    };
    for (int cz = 0; cz < cells[2]; ++cz) {
        for (int cy = 0; cy < cells[1]; ++cy) {
            for (int cx = 0; cx < cells[0]; ++cx) {
                // The distinct neighbour cells (fewer than 3 cells along a
                // dimension make -1 and +1 the same cell).
                std::array<int, 27> neighbours{};
                int count = 0;
                for (int dz = -1; dz <= 1; ++dz) {
                    for (int dy = -1; dy <= 1; ++dy) {
                        for (int dx = -1; dx <= 1; ++dx) {
                            const int c = flatten((cx + dx + cells[0]) % cells[0], (cy + dy + cells[1]) % cells[1],
                                                  (cz + dz + cells[2]) % cells[2]);
                            if (std::find(neighbours.begin(), neighbours.begin() + count, c) ==
                                neighbours.begin() + count) {
                                neighbours[count++] = c;
                            }
                        }
                    }
                }
                const int self = flatten(cx, cy, cz);
                for (int a = start[self]; a < start[self + 1]; ++a) {
                    const int i = sorted[a];
                    // Each pair once: from its atom with the smaller index.
                    for (int k = 0; k < count; ++k) {
                        for (int b = start[neighbours[k]]; b < start[neighbours[k] + 1]; ++b) {
                            if (sorted[b] > i) consider(i, sorted[b]);
                        }
                    }
                }
            }
        }
    }
    return best;
}

void requireNoCloseContacts(const System& system, double minDistance, const std::string& source, bool groLines) {
    if (!(minDistance > 0.0)) return;
    const auto contact = closestContact(system, minDistance);
    if (!contact) return;
    // Atom k of a .gro file is on line k + 3 (title and count first).
    const std::string lines =
        groLines ? fmt::format(", lines {} and {} of the file", contact->first + 3, contact->second + 3) : "";
    throwError(ErrorKind::InvalidInput,
               fmt::format("{}: atoms {} and {} (global ids{}) are only {:.4f} nm apart, closer than --min-distance "
                           "{} nm ({} pair(s) that close): their forces would blow the system up at the first "
                           "step. Fix the structure or relax it (energy minimisation) first; --min-distance 0 "
                           "turns this check off",
                           source, contact->first, contact->second, lines, contact->distance, minDistance,
                           contact->pairs));
}

}  // namespace haloex::md
