// chooseStepKernels (step_kernels.hpp): --fuse-update auto and --sort-atoms
// auto turn on only where they were measured faster, an explicit 0 or 1 is
// kept, and every choice says why.
#include <gtest/gtest.h>

#include <string>

#include "haloex/md/step_kernels.hpp"

using namespace haloex::md;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(StepKernels, AutoFusesAndSortsOneGpuRankUpToTheMeasuredSize) {
    for (const std::int64_t atoms : {std::int64_t{5626}, std::int64_t{360000}, kFuseUpdateMaxAtoms}) {
        const StepKernelChoice c = chooseStepKernels(Toggle::Auto, Toggle::Auto, true, 1, true, atoms);
        EXPECT_TRUE(c.fuseUpdate) << atoms;
        EXPECT_TRUE(c.sortAtoms) << atoms;
        EXPECT_TRUE(contains(c.fuseUpdateReason, "auto: on")) << c.fuseUpdateReason;
        EXPECT_TRUE(contains(c.sortAtomsReason, "auto: on")) << c.sortAtomsReason;
    }
    // Above the bound the fused update measured slower; the cell order alone stays.
    const StepKernelChoice large = chooseStepKernels(Toggle::Auto, Toggle::Auto, true, 1, true, 720000);
    EXPECT_FALSE(large.fuseUpdate);
    EXPECT_TRUE(large.sortAtoms);
    EXPECT_TRUE(contains(large.fuseUpdateReason, "measured slower")) << large.fuseUpdateReason;
}

TEST(StepKernels, AutoIsOffWhereNeitherWasMeasuredFaster) {
    const StepKernelChoice cpu = chooseStepKernels(Toggle::Auto, Toggle::Auto, false, 1, false, 3000);
    EXPECT_FALSE(cpu.fuseUpdate);
    EXPECT_FALSE(cpu.sortAtoms);
    EXPECT_TRUE(contains(cpu.fuseUpdateReason, "CPU reference")) << cpu.fuseUpdateReason;
    const StepKernelChoice ranks = chooseStepKernels(Toggle::Auto, Toggle::Auto, true, 2, true, 22500);
    EXPECT_FALSE(ranks.fuseUpdate);
    EXPECT_FALSE(ranks.sortAtoms);
    EXPECT_TRUE(contains(ranks.fuseUpdateReason, "several ranks")) << ranks.fuseUpdateReason;
    EXPECT_TRUE(contains(ranks.sortAtomsReason, "several ranks")) << ranks.sortAtomsReason;
    const StepKernelChoice host = chooseStepKernels(Toggle::Auto, Toggle::Auto, true, 1, false, 22500);
    EXPECT_FALSE(host.fuseUpdate);
    EXPECT_FALSE(host.sortAtoms);
    EXPECT_TRUE(contains(host.sortAtomsReason, "on the host")) << host.sortAtomsReason;
}

TEST(StepKernels, AnExplicitChoiceIsKept) {
    const StepKernelChoice off = chooseStepKernels(Toggle::Off, Toggle::Off, true, 1, true, 22500);
    EXPECT_FALSE(off.fuseUpdate);
    EXPECT_FALSE(off.sortAtoms);
    EXPECT_EQ(off.fuseUpdateReason, "set");
    const StepKernelChoice on = chooseStepKernels(Toggle::On, Toggle::On, true, 1, true, 720000);
    EXPECT_TRUE(on.fuseUpdate);
    EXPECT_TRUE(on.sortAtoms);
    EXPECT_EQ(on.sortAtomsReason, "set");
}

}  // namespace
