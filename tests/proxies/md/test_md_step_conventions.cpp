// mdrun's step conventions (issue 17, item 1): --steps 0 is a single-point
// evaluation of the first step (energies, forces, nothing advanced), -1 runs
// until stopped, no --steps the documented default. The single point's forces
// are checked against the double-precision force oracle on the same start.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "haloex/core/error.hpp"
#include "haloex/md/cpu_backend.hpp"
#include "haloex/md/engine.hpp"
#include "haloex/md/force_oracle.hpp"
#include "haloex/md/system.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/transport/reference.hpp"

using namespace haloex;
using namespace haloex::md;

namespace {

RunSummary runOnCpu(const MdOptions& resolved, int ranks) {
    RunSummary out;
    runtime::runInProcess(ranks, [&](runtime::World& world) {
        transport::ReferenceTransport transport(world);
        auto backend = makeCpuBackend();
        Engine engine(resolved, world, transport, *backend);
        RunSummary mine = engine.run();
        if (world.rank() == 0) out = std::move(mine);
    });
    return out;
}

MdOptions withSteps(std::int64_t steps, bool given) {
    MdOptions o;
    o.atoms = 1000;
    o.quiet = true;
    o.steps = steps;
    if (given) o.explicitOptions.emplace_back("steps");
    return o;
}

}  // namespace

TEST(StepConventions, NoStepsIsTheDefaultAndZeroGivenIsASinglePoint) {
    EXPECT_EQ(resolveOptions(withSteps(0, false), 2, false).steps, kDefaultStepsCpu);
    EXPECT_EQ(resolveOptions(withSteps(0, false), 2, true).steps, kDefaultStepsGpu);
    const MdOptions single = resolveOptions(withSteps(0, true), 2, false);
    EXPECT_EQ(single.steps, 0);
    EXPECT_EQ(single.thermoEvery, 1);
    const MdOptions endless = resolveOptions(withSteps(kStepsUntilStopped, true), 2, false);
    EXPECT_EQ(endless.steps, kStepsUntilStopped);
    EXPECT_EQ(endless.thermoEvery, kDefaultThermoEveryUntilStopped);
}

TEST(StepConventions, StepsBelowMinusOneAreRefusedWithTheConventions) {
    try {
        resolveOptions(withSteps(-2, true), 2, false);
        FAIL() << "--steps -2 accepted";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("--steps -2: out of range; use -1 (until stopped"), std::string::npos) << msg;
        EXPECT_NE(msg.find("0 (a single-point evaluation"), std::string::npos) << msg;
    }
}

TEST(StepConventions, ASinglePointEvaluatesTheFirstStepsForcesAndEnergiesAndRunsNothing) {
    const MdOptions o = resolveOptions(withSteps(0, true), 2, false);
    const RunSummary run = runOnCpu(o, 2);
    EXPECT_EQ(run.steps, 0);
    EXPECT_EQ(run.requestedSteps, 0);
    EXPECT_FALSE(run.stop.stopped());
    ASSERT_EQ(run.energies.size(), 1u);
    EXPECT_EQ(run.energies[0].step, 0);
    ASSERT_TRUE(run.singlePoint.evaluated);
    EXPECT_EQ(run.singlePoint.step, 0);

    // The same start through the double-precision oracle.
    ForceField ff;
    ff.rc = o.rc;
    System start = makeLatticeSystem(static_cast<int>(o.atoms), o.seed, o.temperature, ff);
    const std::vector<double> charges = start.charges(ff);
    const PairForces<double> exact = computeForcesSingleDomain<double>(start.positions, charges, start.box, ff);
    double maxForce = 0.0, sumSquares = 0.0;
    std::int64_t maxAtom = -1;
    for (int i = 0; i < start.size(); ++i) {
        const Vec3d& f = exact.forces[i];
        const double f2 = f.x * f.x + f.y * f.y + f.z * f.z;
        sumSquares += f2;
        if (f2 > maxForce * maxForce) {
            maxForce = std::sqrt(f2);
            maxAtom = start.globalIds[i];
        }
    }
    const double rms = std::sqrt(sumSquares / start.size());
    // Float forces recovered from the float velocity update: 1e-4 relative.
    EXPECT_NEAR(run.singlePoint.maxForce, maxForce, 1e-4 * maxForce);
    EXPECT_EQ(run.singlePoint.maxForceAtom, maxAtom);
    EXPECT_NEAR(run.singlePoint.rmsForce, rms, 1e-4 * rms);
    EXPECT_NEAR(run.energies[0].lj, exact.ljEnergy, 1e-5 * std::abs(exact.ljEnergy));
}
