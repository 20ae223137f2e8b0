#pragma once
// CPU reference of the GPU cluster-pair list (nonbonded.hpp): the same
// gridding, search and masks, computed serially with the shared rules of
// cluster_geometry.hpp. The GPU build must produce exactly this layout and
// these lists; the reference force evaluation runs the kernel's formula in
// float over the list. Pure C++: usable and testable without a GPU.
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "haloex/core/vec3.hpp"
#include "haloex/md/forcefield.hpp"
#include "haloex/md/gpu/cluster_geometry.hpp"
#include "haloex/md/gpu/grid_choice.hpp"
#include "haloex/md/gpu/pair_interaction.hpp"
#include "haloex/plan/box.hpp"

namespace haloex::md::gpu {

// Atoms in cluster order. Clusters [0, numHomeClusters) hold home atoms.
struct ClusterLayoutHost {
    GridChoice grids;
    int numHomeClusters = 0;
    int numClusters = 0;
    std::vector<int> columnClusterStart;  // numColumns + 1 (global column numbering)
    std::vector<int> atomOfSlot;          // numClusters * 8: local atom index, -1 = empty slot
    std::vector<Float3> bboxLo, bboxHi;   // per cluster, over its atoms
};

struct PairListHost {
    std::vector<ClusterEntry> entries;
    std::vector<ClusterPair> pairs;
    std::int64_t atomPairs() const;  // set mask bits
};

// What the search needs besides the layout.
struct SearchSettings {
    plan::Box box;
    std::array<bool, 3> periodic{true, true, true};
    double rlist = 1.0;
    int maxJClustersPerEntry = 32;
};

// Throws InvalidInput unless rlist is positive and every periodic box
// length exceeds 2 rlist (so one shift per atom pair, docs/planner.md).
void validateSearchSettings(const SearchSettings& settings, const char* where);

// Float copies of the list's rlist^2 and box lengths, as the GPU uses them.
float rlistSquared(double rlist);
// Radius of the column search region: rlist plus a hair, so that rounding in
// the column range can never drop a cluster the (exact) box test accepts.
float columnSearchRadius(double rlist);
Float3 boxLengthsF(const plan::Box& box);

// zoneMask may be empty (all atoms home: numLocal == numHome).
// Bounds of atoms [begin, end); padding atoms (at or after numHome) are skipped,
// a non-finite position throws InvalidInput naming the atom.
AtomBounds boundsReference(std::span<const Vec3f> x, int begin, int end, int numHome,
                           std::span<const plan::ZoneMask> zoneMask);
ClusterLayoutHost buildLayoutReference(std::span<const Vec3f> x, std::span<const plan::ZoneMask> zoneMask, int numHome);
// gpu::CellOrder's order of the home atoms `home` (cell_order.hpp), exactly:
// the home grid chooseGrids takes from their bounds alone, then a stable sort
// by column and the exact z offset from the grid's lower z. order[i]: the atom
// that goes to place i. Any non-finite position gives the identity.
std::vector<int> cellOrderReference(std::span<const Vec3f> home);
PairListHost searchReference(const ClusterLayoutHost& layout, std::span<const Vec3f> x,
                             std::span<const plan::ZoneMask> zoneMask, bool nonlocal, const SearchSettings& settings);

// The inner list of `outer` for dynamic pruning (NonbondedOptions::
// rlistInner): every entry, in order, keeps the pairs, in order, that have an
// unmasked atom pair with atomDistance2 < rlistSquared(rlistInner) at the
// positions x -- the device prune's decision, bit for bit. Dense (like
// searchReference's lists, comparable with Nonbonded::copyListToHost(kind,
// ListView::Evaluated)). Entries [entryBegin, entryEnd) are pruned; the others
// keep all their pairs (entryEnd < 0: to the last entry).
PairListHost pruneReference(const ClusterLayoutHost& layout, const PairListHost& outer, std::span<const Vec3f> x,
                            const SearchSettings& settings, double rlistInner, int entryBegin = 0, int entryEnd = -1);

// Forces and energies over one list, in float with the kernel's formula
// (energies summed in double). Forces are added into `forces` (numLocal).
// pairsWithinCutoff counts r^2 < rc^2 with atomDistance2 (exactly what the
// GPU's countPairsWithinCutoff computes). The *Magnitude sums of |term| are
// the scale for energy comparisons: the totals are small differences of
// large sums (LJ: ~86 kJ/mol out of ~10^4 for ref-3000), so float rounding of
// the pair distances alone moves them by ~1e-4 relative.
struct ListEnergies {
    double lj = 0.0, coulomb = 0.0, virial = 0.0;
    double ljMagnitude = 0.0, coulombMagnitude = 0.0, virialMagnitude = 0.0;
    std::int64_t pairsWithinCutoff = 0;
};
ListEnergies evaluateListReference(const ClusterLayoutHost& layout, const PairListHost& list, std::span<const Vec3f> x,
                                   std::span<const float> charges, const SearchSettings& settings, const ForceField& ff,
                                   std::span<Vec3f> forces);

}  // namespace haloex::md::gpu
