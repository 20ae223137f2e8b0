#pragma once
// Exact recount of what the Verlet buffer misses: pairs that are within rc at
// the end of a pair list's life but were beyond rlist when the list was built
// (so no list can hold them). Their energy is the error the buffer lets in
// (docs/md-engine.md: it should stay below the tolerance, kJ/mol/ps per atom).
#include <cstdint>
#include <span>

#include "haloex/core/vec3.hpp"
#include "haloex/md/forcefield.hpp"
#include "haloex/plan/box.hpp"

namespace haloex::md {

struct MissedPairs {
    std::int64_t count = 0;
    double energy = 0.0;          // sum of the missed pairs' energies (kJ/mol)
    double absoluteEnergy = 0.0;  // sum of their magnitudes (no cancellation)
};

// Both position sets index the same atoms; minimum image in every dimension.
MissedPairs countMissedPairs(std::span<const Vec3d> atBuild, std::span<const Vec3d> now,
                             std::span<const double> charges, const plan::Box& box, const ForceField& ff, double rlist);

// With dynamic pruning the kernel evaluates the inner list, so it also
// misses pairs the outer list holds: within rc now, within rlist at the
// build (so not counted above; the two counts add up) but beyond rlistInner
// at `atPrune`, the positions the inner list was pruned with. Given the
// positions of the oldest prune before the next search (pruneParts steps
// back), this is what the inner list misses at the end of its life. Like
// countMissedPairs it decides per atom pair, so it bounds the GPU's misses
// from above: the GPU keeps a whole cluster pair when any of its atom pairs
// is within rlistInner, and its younger parts were pruned later.
MissedPairs countMissedByPruning(std::span<const Vec3d> atBuild, std::span<const Vec3d> atPrune,
                                 std::span<const Vec3d> now, std::span<const double> charges, const plan::Box& box,
                                 const ForceField& ff, double rlist, double rlistInner);

}  // namespace haloex::md
