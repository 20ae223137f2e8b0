#pragma once
/// @file
/// The Cartesian grid of ranks. Rank numbering: x fastest, then y, then z
/// (rank = cx + nx*(cy + ny*cz)). Neighbours are periodic.
#include <array>
#include <string>
#include <string_view>

namespace haloex::plan {

using Int3 = std::array<int, 3>;  ///< three integers: extents or coordinates, x first

/// Most ranks a grid may have (rank numbers are int).
inline constexpr int kMaxGridRanks = 2147483647;

/// Ranks laid out as a 3D grid, x fastest (rank = x + nx * (y + ny * z)); neighbours wrap periodically.
class RankGrid {
public:
    RankGrid() = default;
    /// Throws InvalidInput unless every entry is >= 1 and the product at most kMaxGridRanks.
    explicit RankGrid(Int3 dims);

    const Int3& dims() const { return dims_; }                   ///< ranks per dimension
    int dim(int d) const { return dims_[d]; }                    ///< ranks along `d`
    int size() const { return dims_[0] * dims_[1] * dims_[2]; }  ///< ranks in all
    bool decomposed(int d) const { return dims_[d] > 1; }        ///< more than one rank along `d`

    Int3 coordOf(int rank) const;         ///< `rank`'s place in the grid
    int rankOf(const Int3& coord) const;  ///< coordinates are wrapped periodically
    /// The rank one step along dimension d (step = -1 lower, +1 upper), periodic.
    int neighbour(int rank, int d, int step) const;

    std::string toString() const;  ///< "2x2x1"

private:
    Int3 dims_{1, 1, 1};
};

/// Parses "NXxNYxNZ" (also "NX" or "NXxNY"; missing dimensions are 1).
/// Throws InvalidInput with the offending text.
RankGrid parseRankGrid(std::string_view text);

/// Throws InvalidInput unless grid.size() == numRanks, naming both.
void requireGridMatchesRanks(const RankGrid& grid, int numRanks);

}  // namespace haloex::plan
