#pragma once
// Which kernels a GPU step runs where the user left it to the run
// (--fuse-update auto, --sort-atoms auto): the fused update and the atoms in
// cell order, decided from what was measured (docs/md-engine.md, "Fused
// update" and "Atoms in cell order").
#include <cstdint>
#include <string>

#include "haloex/md/options.hpp"

namespace haloex::md {

// The fused update measured faster on one H200 from 5 626 to 360 000 atoms
// (with the cell order: 1.18x steady at 5 626, 1.02x at 360 000) and slower
// at 720 000 (754 against 744 us steady with the cell order alone): on up
// to about half way between the last two sizes.
inline constexpr std::int64_t kFuseUpdateMaxAtoms = 500'000;

struct StepKernelChoice {
    bool fuseUpdate = false;
    bool sortAtoms = false;
    std::string fuseUpdateReason;  // "set" when given, else why auto chose it
    std::string sortAtomsReason;
};

// An explicit 0 or 1 is kept (resolveOptions and the engine refuse a 1 that
// cannot run); auto is on only where it was measured faster, on GPU ranks
// searching on the device: for one rank the fused update up to
// kFuseUpdateMaxAtoms atoms and the cell order; for several ranks the two
// together (on ranks sharing one GPU under MPS the pair was 3-5 % faster
// all steps counted, the fused update alone slower and the cell order alone
// no faster: docs/md-engine.md), so an explicit 0 for one turns the other's
// auto off too. atoms: the whole system's (the bound holds per rank).
StepKernelChoice chooseStepKernels(Toggle fuseUpdate, Toggle sortAtoms, bool onGpu, int numRanks, bool deviceSearch,
                                   std::int64_t atoms);

// One choice as the summary and md.log print it: "on (why)" or "off (why)".
std::string describeStepKernel(bool on, const std::string& reason);

}  // namespace haloex::md
