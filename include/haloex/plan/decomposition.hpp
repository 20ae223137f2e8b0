#pragma once
/// @file
/// A validated domain decomposition: box, rank grid, cutoffs, pulses per
/// dimension and the global pulse order. Construction refuses what would give
/// wrong physics (an atom meeting its own image), with a message that names the
/// dimension, the cell width and the halo distance.
#include <array>
#include <vector>

#include "haloex/plan/box.hpp"
#include "haloex/plan/rank_grid.hpp"

namespace haloex::plan {

/// What a decomposition is made of.
struct DecompositionSpec {
    Box box;             ///< the periodic box
    RankGrid grid;       ///< ranks per dimension
    double rc = 0.9;     ///< interaction cutoff (nm)
    double rlist = 0.9;  ///< buffered pair-list cutoff = halo distance (nm), >= rc
    /// Dimensions in pulse order; the paper's order is z, y, x.
    std::array<int, 3> dimOrder{2, 1, 0};
    /// Corner and edge pruning (plan/send_rule.hpp): an atom that arrived
    /// through another dimension's pulse is passed on only when it lies within
    /// rlist of the receiver's home cell, as GROMACS's zone bounds do. false:
    /// every atom within rlist along the pulse's dimension (the whole slab).
    bool pruneCorners = true;
};

/// A pulse's place in the global order: its dimension and stage.
struct PulseSlot {
    int dim;    ///< the dimension it moves along
    int stage;  ///< 0 for the first pulse of that dimension, 1 for the next, ...
};

/// The box split into one cell per rank, and the pulses a halo of width
/// rlist needs along each dimension.
class Decomposition {
public:
    explicit Decomposition(const DecompositionSpec& spec);  ///< throws Plan / InvalidInput

    const DecompositionSpec& spec() const { return spec_; }  ///< what it was made of
    const Box& box() const { return spec_.box; }             ///< the periodic box
    const RankGrid& grid() const { return spec_.grid; }      ///< ranks per dimension
    double rlist() const { return spec_.rlist; }             ///< the halo distance
    double rc() const { return spec_.rc; }                   ///< the interaction cutoff
    bool prunesCorners() const {
        return spec_.pruneCorners;
    }  ///< corner and edge pruning (DecompositionSpec::pruneCorners)

    /// A cell's width along dimension `d` (every cell alike).
    double cellWidth(int d) const { return spec_.box.length[d] / spec_.grid.dim(d); }
    double cellLo(int rank, int d) const;  ///< where `rank`'s cell starts along `d`
    double cellHi(int rank, int d) const;  ///< where `rank`'s cell ends along `d`
    /// Pulses along `d` (0 where the dimension is not decomposed).
    int pulsesInDim(int d) const { return pulsesPerDim_[d]; }
    /// The global pulse order: dims in spec().dimOrder, stages in order.
    const std::vector<PulseSlot>& pulseOrder() const { return pulseOrder_; }
    int totalPulses() const { return static_cast<int>(pulseOrder_.size()); }  ///< pulses in all

    /// Rank whose home cell holds x (x must already be wrapped into the box).
    int ownerRank(const Vec3d& x) const;

private:
    DecompositionSpec spec_;
    std::array<int, 3> pulsesPerDim_{0, 0, 0};
    std::vector<PulseSlot> pulseOrder_;
};

/// Number of pulses needed to cover `halo` over cells `cellWidth` wide.
int pulsesNeeded(double halo, double cellWidth);

/// Chooses a rank grid for numRanks: among the factorisations the planner
/// accepts, the one with the smallest halo volume per rank (ties: fewer
/// decomposed dimensions, then x before y before z). Throws Plan if none fits.
RankGrid chooseRankGrid(int numRanks, const Box& box, double rc, double rlist);

}  // namespace haloex::plan
