// The MD engine decomposed over MPI processes (CPU backend, host-memory
// staged transport) reproduces the single-rank run: forces at step 0 (from the
// velocities after one step), energies over the first 20 steps, and no atom is
// lost or duplicated over many repartitionings.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>

#include <unistd.h>

#include "haloex/md/checkpoint.hpp"
#include "haloex/md/cpu_backend.hpp"
#include "haloex/md/engine.hpp"
#include "haloex/md/system.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/transport/reference.hpp"
#include "haloex/transport/registry.hpp"
#include "mpi_test_main.hpp"

namespace {

using namespace haloex;

// One name per job, the same on all its ranks (their parent is the job's
// launcher): the np2/np4/np8 variants run side by side under ctest -j, and
// other trees' runs on the same machine, each writing its own checkpoint.
std::string scratch(const std::string& name) {
    const std::string job = std::to_string(static_cast<long>(::getppid()));
    return (std::filesystem::temp_directory_path() / ("haloex_dd_" + job + "_" + name)).string();
}

// A checkpoint and what the output layer keeps beside it (the single run's, the backups).
void removeScratch(const std::string& path) {
    for (const char* suffix : {"", ".prev", ".single", ".single.prev"}) std::filesystem::remove(path + suffix);
}

md::MdOptions baseOptions() {
    md::MdOptions o;
    o.atoms = 3000;
    o.seed = 11;
    o.quiet = true;
    return o;
}

// The run on this job's ranks (staged host transport over MPI).
md::RunSummary runDecomposed(const md::MdOptions& o) {
    runtime::World& world = testsupport::mpiTestWorld();
    const md::MdOptions resolved = md::resolveOptions(o, world.size(), false);
    auto transport = transport::makeTransport(transport::Backend::Staged, world);  // host memory: its default
    auto backend = md::makeCpuBackend();
    md::Engine engine(resolved, world, *transport, *backend);
    return engine.run();
}

// The same run on one rank (every rank computes it, in its own process).
md::RunSummary runSingle(md::MdOptions o) {
    o.grid = "1x1x1";
    o.checkpointFile = o.checkpointFile.empty() ? "" : o.checkpointFile + ".single";
    const md::MdOptions resolved = md::resolveOptions(o, 1, false);
    runtime::World& world = runtime::singleRankWorld();
    transport::ReferenceTransport transport(world);
    auto backend = md::makeCpuBackend();
    md::Engine engine(resolved, world, transport, *backend);
    return engine.run();
}

TEST(MdDecomposed, FirstTwentyStepsMatchTheSingleRankRun) {
    md::MdOptions o = baseOptions();
    o.steps = 20;
    o.thermoEvery = 1;
    const md::RunSummary dd = runDecomposed(o);
    const md::RunSummary single = runSingle(o);
    ASSERT_EQ(dd.energies.size(), single.energies.size());
    ASSERT_EQ(dd.energies.size(), 21u);  // steps 0 to 20, the last one's where the run ends
    const auto& d0 = dd.energies.front();
    const auto& s0 = single.energies.front();
    // Step 0: the same positions, float forces summed in another order.
    EXPECT_NEAR(d0.potential, s0.potential, 1e-6 * std::abs(s0.potential));
    EXPECT_NEAR(d0.kinetic, s0.kinetic, 1e-6 * s0.kinetic);
    double worst = 0.0;
    for (std::size_t i = 0; i < dd.energies.size(); ++i) {
        worst = std::max(worst, std::abs(dd.energies[i].total - single.energies[i].total) /
                                    std::abs(single.energies[i].total));
    }
    EXPECT_LE(worst, 1e-5) << "total energy over 20 steps, " << dd.ranks << " ranks on grid " << dd.grid;
    if (testsupport::mpiTestWorld().rank() == 0) {
        std::printf("%d ranks (%s): step-0 potential %.6f vs %.6f; worst relative total-energy difference over 20 "
                    "steps %.2e\n",
                    dd.ranks, dd.grid.c_str(), d0.potential, s0.potential, worst);
    }
}

TEST(MdDecomposed, StepZeroForcesMatchTheSingleRankRun) {
    // v(1/2) = v(-1/2) + f(0) dt / m: one step's velocities carry the forces.
    md::MdOptions o = baseOptions();
    o.steps = 1;
    o.checkpointFile = scratch("forces.cpt");
    runDecomposed(o);
    runSingle(o);
    runtime::World& world = testsupport::mpiTestWorld();
    world.barrier();
    const md::CheckpointData dd = md::readCheckpoint(o.checkpointFile);
    const md::CheckpointData single = md::readCheckpoint(o.checkpointFile + ".single");
    ASSERT_EQ(dd.system.size(), single.system.size());
    // v(-1/2) of the lattice start (the same recipe both runs used).
    const md::ForceField ff;
    const md::System start = md::makeLatticeSystem(static_cast<int>(o.atoms), o.seed, o.temperature, ff);
    const double dt = md::resolveOptions(o, 1, false).dt;
    double diff2 = 0.0, ref2 = 0.0;
    for (int i = 0; i < dd.system.size(); ++i) {
        ASSERT_EQ(dd.system.globalIds[i], single.system.globalIds[i]);
        const auto g = static_cast<std::size_t>(dd.system.globalIds[i]);
        const Vec3d fDd = (dd.system.velocities[i] - start.velocities[g]) * (ff.mass / dt);
        const Vec3d fSingle = (single.system.velocities[i] - start.velocities[g]) * (ff.mass / dt);
        diff2 += haloex::norm2(fDd - fSingle);
        ref2 += haloex::norm2(fSingle);
    }
    const double relative = std::sqrt(diff2 / ref2);
    EXPECT_LE(relative, 1e-5) << "||f_dd - f_single|| / scale after one step";
    if (world.rank() == 0) std::printf("step-0 forces: relative difference %.2e\n", relative);
    world.barrier();
    if (world.rank() == 0) removeScratch(o.checkpointFile);
}

TEST(MdDecomposed, NoAtomIsLostOrDuplicatedOverManyRepartitionings) {
    md::MdOptions o = baseOptions();
    o.steps = 200;
    o.nstlist = 10;  // 20 repartitionings
    o.checkpointFile = scratch("atoms.cpt");
    const md::RunSummary dd = runDecomposed(o);
    EXPECT_EQ(dd.searchSteps, 20);
    runtime::World& world = testsupport::mpiTestWorld();
    world.barrier();
    const md::CheckpointData end = md::readCheckpoint(o.checkpointFile);
    std::set<std::int64_t> ids(end.system.globalIds.begin(), end.system.globalIds.end());
    EXPECT_EQ(static_cast<std::int64_t>(ids.size()), o.atoms);
    EXPECT_EQ(end.system.size(), o.atoms);
    EXPECT_EQ(*ids.begin(), 0);
    EXPECT_EQ(*ids.rbegin(), o.atoms - 1);
    world.barrier();
    if (world.rank() == 0) removeScratch(o.checkpointFile);
}

}  // namespace
