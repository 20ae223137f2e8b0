#pragma once
/// @file
/// Structured-grid halo plan (stencils): a block-distributed 2D/3D array with a
/// halo of `haloWidth` cells on both sides of every dimension that has more than
/// one cell. Each dimension has two pulses (Down fills the upper halo, Up the
/// lower one); dimensions are taken in order and each later dimension forwards
/// the halos filled earlier, so edges and corners arrive without extra messages
/// -- the same staged forwarding as the particle plan, on the same Pulse type.
/// Star stencils (5- and 7-point) read no edge or corner cell: a faces-only
/// plan (GridSpec::edgesAndCorners = false) sends each rank's own face cells
/// only, so no pulse forwards another's data and all of them may travel at once.
///
/// Local layout: x fastest, then y, then z, with the halo included:
/// index = (i + hx) + ax * ((j + hy) + ay * (k + hz)) for interior cell (i, j, k),
/// where (ax, ay, az) = allocated extents and (hx, hy, hz) = halo widths.
#include <array>
#include <vector>

#include "haloex/plan/pulse.hpp"
#include "haloex/plan/rank_grid.hpp"

namespace haloex::plan {

/// A structured grid split over ranks, and its halo.
struct GridSpec {
    Int3 cells{1, 1, 1};                             ///< global interior cells; a 2D grid has cells[2] == 1
    RankGrid grid;                                   ///< ranks per dimension
    int haloWidth = 1;                               ///< halo cells on each side of a decomposed dimension
    std::array<bool, 3> periodic{true, true, true};  ///< per dimension: wraps around
    std::array<int, 3> dimOrder{2, 1, 0};            ///< dimensions in pulse order
    /// false: faces only -- every pulse carries the sender's interior cells of
    /// one face and fills face halo cells only (edge and corner halo cells keep
    /// what the caller put there); no pulse depends on another.
    bool edgesAndCorners = true;
};

/// One rank's grid halo: its cells and the pulses that fill its halo cells.
struct GridHaloPlan {
    int rank = 0;                      ///< the rank
    Int3 coord{0, 0, 0};               ///< its place in the rank grid
    Int3 interior{1, 1, 1};            ///< this rank's interior extents
    Int3 origin{0, 0, 0};              ///< global index of its first interior cell
    Int3 halo{0, 0, 0};                ///< halo width per dimension (0 where the grid has one cell)
    Int3 allocated{1, 1, 1};           ///< interior + 2 * halo
    std::vector<Pulse> pulses;         ///< scattered placement: recvIndices / remoteRecvIndices
    std::vector<int> receivedInPulse;  ///< per local cell: filling pulse id, or -1
    /// The spec's: later dimensions forward the halos of earlier ones (false:
    /// faces only, no pulse depends on another). The same on every rank, unlike
    /// Pulse::waitsForward, which is empty where a rank received nothing to forward.
    bool edgesAndCorners = true;

    int numLocal() const { return allocated[0] * allocated[1] * allocated[2]; }  ///< cells allocated
    /// Local index of cell (i, j, k) in interior coordinates (halo cells are
    /// negative or >= interior).
    int localIndex(int i, int j, int k) const {
        return (i + halo[0]) + allocated[0] * ((j + halo[1]) + allocated[1] * (k + halo[2]));
    }
};

/// Throws InvalidInput for a halo wider than a rank's interior, empty blocks,
/// or a rank grid larger than the cell grid, naming the dimension.
void validateGridSpec(const GridSpec& spec);

/// The plan of one rank (computed without communication).
GridHaloPlan buildGridPlan(const GridSpec& spec, int rank);

/// Block distribution: first cell and extent of block `c` of `n` over `cells`.
int blockStart(int cells, int n, int c);
/// The extent of block `c` of `n` over `cells` (see blockStart).
int blockExtent(int cells, int n, int c);

}  // namespace haloex::plan
