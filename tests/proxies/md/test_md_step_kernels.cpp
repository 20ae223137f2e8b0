// chooseStepKernels (step_kernels.hpp): --fuse-update auto and --sort-atoms
// auto turn on only where they were measured faster (with several ranks the
// two together), an explicit 0 or 1 is kept, and every choice says why.
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
    const StepKernelChoice host = chooseStepKernels(Toggle::Auto, Toggle::Auto, true, 1, false, 22500);
    EXPECT_FALSE(host.fuseUpdate);
    EXPECT_FALSE(host.sortAtoms);
    EXPECT_TRUE(contains(host.sortAtomsReason, "on the host")) << host.sortAtomsReason;
    const StepKernelChoice hostRanks = chooseStepKernels(Toggle::Auto, Toggle::Auto, true, 2, false, 22500);
    EXPECT_FALSE(hostRanks.fuseUpdate);
    EXPECT_FALSE(hostRanks.sortAtoms);
    EXPECT_TRUE(contains(hostRanks.fuseUpdateReason, "on the host")) << hostRanks.fuseUpdateReason;
}

TEST(StepKernels, SeveralRanksTakeBothTogetherOrNeither) {
    // Together they measured faster with a halo; each alone did not.
    const StepKernelChoice both = chooseStepKernels(Toggle::Auto, Toggle::Auto, true, 2, true, 22500);
    EXPECT_TRUE(both.fuseUpdate);
    EXPECT_TRUE(both.sortAtoms);
    EXPECT_TRUE(contains(both.fuseUpdateReason, "GPU ranks")) << both.fuseUpdateReason;
    EXPECT_TRUE(contains(both.sortAtomsReason, "GPU ranks")) << both.sortAtomsReason;
    const StepKernelChoice unsorted = chooseStepKernels(Toggle::Auto, Toggle::Off, true, 4, true, 45000);
    EXPECT_FALSE(unsorted.fuseUpdate);
    EXPECT_TRUE(contains(unsorted.fuseUpdateReason, "cell order off")) << unsorted.fuseUpdateReason;
    const StepKernelChoice unfused = chooseStepKernels(Toggle::Off, Toggle::Auto, true, 4, true, 45000);
    EXPECT_FALSE(unfused.sortAtoms);
    EXPECT_TRUE(contains(unfused.sortAtomsReason, "fused update off")) << unfused.sortAtomsReason;
    // The fused update's bound holds per rank: 4 ranks of 360 000 atoms fuse, 2 of 720 000 do not.
    EXPECT_TRUE(chooseStepKernels(Toggle::Auto, Toggle::Auto, true, 4, true, 1440000).fuseUpdate);
    const StepKernelChoice large = chooseStepKernels(Toggle::Auto, Toggle::Auto, true, 2, true, 1440000);
    EXPECT_FALSE(large.fuseUpdate);
    EXPECT_TRUE(contains(large.fuseUpdateReason, "per rank")) << large.fuseUpdateReason;
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
