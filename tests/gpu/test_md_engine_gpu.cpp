// The MD engine on one GPU: the first step's energies agree with the CPU
// reference backend, and an NVE run conserves energy (DESIGN §5: drift of the
// conserved energy <= 0.01 kJ/mol/ps per atom over 20 000 steps of 2 fs).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "haloex/md/cpu_backend.hpp"
#include "haloex/md/engine.hpp"
#include "haloex/md/gpu_backend.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/transport/factory.hpp"
#include "haloex/transport/reference.hpp"

namespace {

using namespace haloex;

bool haveGpu() { return md::visibleGpuCount() > 0; }

md::RunSummary runOnGpu(md::MdOptions o) {
    runtime::World& world = runtime::singleRankWorld();
    const md::MdOptions resolved = md::resolveOptions(o, 1, true);
    transport::TransportOptions topts;
    topts.memorySpace = transport::MemorySpace::Device;
    auto transport = transport::makeTransport("staged", world, topts);
    auto backend = md::makeGpuBackend({});
    md::Engine engine(resolved, world, *transport, *backend);
    return engine.run();
}

md::RunSummary runOnCpu(md::MdOptions o, int ranks) {
    const md::MdOptions resolved = md::resolveOptions(o, ranks, false);
    md::RunSummary out;
    runtime::runInProcess(ranks, [&](runtime::World& world) {
        transport::ReferenceTransport transport(world);
        auto backend = md::makeCpuBackend();
        md::Engine engine(resolved, world, transport, *backend);
        auto s = engine.run();
        if (world.rank() == 0) out = s;
    });
    return out;
}

TEST(MdEngineGpu, FirstStepEnergiesMatchTheCpuReference) {
    if (!haveGpu()) GTEST_SKIP() << "no GPU visible: the GPU engine test needs one";
    md::MdOptions o;
    o.atoms = 4000;
    o.steps = 1;
    o.quiet = true;
    const auto gpu = runOnGpu(o);
    const auto cpu = runOnCpu(o, 2);
    ASSERT_FALSE(gpu.energies.empty());
    ASSERT_FALSE(cpu.energies.empty());
    const auto& g = gpu.energies.front();
    const auto& c = cpu.energies.front();
    std::printf("step 0: GPU LJ %.6f Coul %.6f KE %.6f | CPU LJ %.6f Coul %.6f KE %.6f\n", g.lj, g.coulomb,
                g.kinetic, c.lj, c.coulomb, c.kinetic);
    // Float arithmetic on both sides; the totals are differences of large sums.
    EXPECT_NEAR(g.lj, c.lj, 1e-4 * std::abs(c.lj) + 0.05);
    EXPECT_NEAR(g.coulomb, c.coulomb, 1e-5 * std::abs(c.coulomb) + 0.05);
    EXPECT_NEAR(g.kinetic, c.kinetic, 1e-5 * c.kinetic);
}

TEST(MdEngineGpu, NveConservesEnergyOver20000Steps) {
    if (!haveGpu()) GTEST_SKIP() << "no GPU visible: the NVE drift test needs one";
    md::MdOptions o;
    o.atoms = 6000;
    o.steps = 20000;
    o.thermoEvery = 100;
    o.quiet = true;
    const auto run = runOnGpu(o);
    ASSERT_GT(run.energies.size(), 100u);
    // Least-squares slope of the conserved energy against time, per atom.
    double st = 0, se = 0, stt = 0, ste = 0;
    const double n = static_cast<double>(run.energies.size());
    for (const auto& e : run.energies) {
        st += e.time;
        se += e.conserved;
        stt += e.time * e.time;
        ste += e.time * e.conserved;
    }
    const double slope = (n * ste - st * se) / (n * stt - st * st);
    const double driftPerAtom = slope / static_cast<double>(run.atoms);
    std::printf("NVE: %lld atoms, %lld steps of %.3f ps, rlist %.3f nm, nstlist %d: conserved-energy drift "
                "%.3g kJ/mol/ps per atom (first %.2f, last %.2f kJ/mol)\n",
                static_cast<long long>(run.atoms), static_cast<long long>(run.steps), run.dt, run.rlist, run.nstlist,
                driftPerAtom, run.energies.front().conserved, run.energies.back().conserved);
    EXPECT_LE(std::abs(driftPerAtom), 0.01);
}

}  // namespace
