#include "haloex/md/step_kernels.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace haloex::md {

StepKernelChoice chooseStepKernels(Toggle fuseUpdate, Toggle sortAtoms, bool onGpu, int numRanks, bool deviceSearch,
                                   std::int64_t atoms) {
    StepKernelChoice c;
    // Where neither can run, auto says why (the first reason that applies).
    const char* notHere = !onGpu          ? "the CPU reference has no GPU step"
                          : !deviceSearch ? "the search is on the host"
                                          : nullptr;
    const bool severalRanks = numRanks > 1;
    // The bound was measured on one rank: with several it holds per rank.
    const std::int64_t atomsPerRank = atoms / std::max(numRanks, 1);
    if (fuseUpdate != Toggle::Auto) {
        c.fuseUpdate = fuseUpdate == Toggle::On;
        c.fuseUpdateReason = "set";
    } else if (notHere != nullptr) {
        c.fuseUpdateReason = fmt::format("auto: off, {}", notHere);
    } else if (atomsPerRank > kFuseUpdateMaxAtoms) {
        c.fuseUpdateReason =
            fmt::format("auto: off above {} atoms per rank, where it measured slower", kFuseUpdateMaxAtoms);
    } else if (severalRanks && sortAtoms == Toggle::Off) {
        // With a halo it measured slower alone, faster with the cell order.
        c.fuseUpdateReason = "auto: off with several ranks and the cell order off, where it measured slower";
    } else {
        c.fuseUpdate = true;
        c.fuseUpdateReason =
            severalRanks ? fmt::format("auto: on for GPU ranks searching on the device, with the cell order, up to {} "
                                       "atoms per rank (measured on ranks sharing one GPU)",
                                       kFuseUpdateMaxAtoms)
                         : fmt::format("auto: on for one GPU rank with at most {} atoms", kFuseUpdateMaxAtoms);
    }
    if (sortAtoms != Toggle::Auto) {
        c.sortAtoms = sortAtoms == Toggle::On;
        c.sortAtomsReason = "set";
    } else if (notHere != nullptr) {
        c.sortAtomsReason = fmt::format("auto: off, {}", notHere);
    } else if (severalRanks && fuseUpdate == Toggle::Off) {
        // With a halo the cell order alone was no faster: it adds to the search step.
        c.sortAtomsReason = "auto: off with several ranks and the fused update off, where it measured no faster";
    } else {
        c.sortAtoms = true;
        c.sortAtomsReason = severalRanks
                                ? "auto: on for GPU ranks searching on the device (measured on ranks sharing one GPU)"
                                : "auto: on for one GPU rank searching on the device";
    }
    return c;
}

std::string describeStepKernel(bool on, const std::string& reason) {
    return fmt::format("{} ({})", on ? "on" : "off", reason);
}

}  // namespace haloex::md
