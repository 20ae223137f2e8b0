#include "haloex/md/step_kernels.hpp"

#include <fmt/format.h>

namespace haloex::md {

StepKernelChoice chooseStepKernels(Toggle fuseUpdate, Toggle sortAtoms, bool onGpu, int numRanks, bool deviceSearch,
                                   std::int64_t atoms) {
    StepKernelChoice c;
    // Where neither can run, auto says why (the first reason that applies).
    const char* notHere = !onGpu          ? "the CPU reference has no GPU step"
                          : numRanks > 1  ? nullptr
                          : !deviceSearch ? "the search is on the host"
                                          : nullptr;
    if (fuseUpdate != Toggle::Auto) {
        c.fuseUpdate = fuseUpdate == Toggle::On;
        c.fuseUpdateReason = "set";
    } else if (notHere != nullptr) {
        c.fuseUpdateReason = fmt::format("auto: off, {}", notHere);
    } else if (numRanks > 1) {
        c.fuseUpdateReason = "auto: off with several ranks, where it has not been measured faster";
    } else if (atoms > kFuseUpdateMaxAtoms) {
        c.fuseUpdateReason = fmt::format("auto: off above {} atoms, where it measured slower", kFuseUpdateMaxAtoms);
    } else {
        c.fuseUpdate = true;
        c.fuseUpdateReason = fmt::format("auto: on for one GPU rank with at most {} atoms", kFuseUpdateMaxAtoms);
    }
    if (sortAtoms != Toggle::Auto) {
        c.sortAtoms = sortAtoms == Toggle::On;
        c.sortAtomsReason = "set";
    } else if (notHere != nullptr) {
        c.sortAtomsReason = fmt::format("auto: off, {}", notHere);
    } else if (numRanks > 1) {
        c.sortAtomsReason = "auto: off with several ranks, where it was not measured faster";
    } else {
        c.sortAtoms = true;
        c.sortAtomsReason = "auto: on for one GPU rank searching on the device";
    }
    return c;
}

std::string describeStepKernel(bool on, const std::string& reason) {
    return fmt::format("{} ({})", on ? "on" : "off", reason);
}

}  // namespace haloex::md
