// Checkpoint, restart, trajectory and GROMACS export through the public Engine
// API (CPU backend, in-process ranks): a restart from a checkpoint at a search
// step continues the trajectory bit for bit on the same ranks, and to 1e-6 on
// a different number of ranks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>

#include "haloex/core/error.hpp"
#include "haloex/md/checkpoint.hpp"
#include "haloex/md/cpu_backend.hpp"
#include "haloex/md/engine.hpp"
#include "haloex/md/gro.hpp"
#include "haloex/md/system.hpp"
#include "haloex/runtime/world.hpp"
#include "haloex/transport/reference.hpp"
#include "test_refusal.hpp"
#include "test_temp_dir.hpp"

using namespace haloex;
using namespace haloex::md;
namespace fs = std::filesystem;

namespace {

fs::path freshDir() { return haloex::testing::freshTestDir("haloex_restart"); }

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

MdOptions baseOptions() {
    MdOptions o;
    o.atoms = 2000;
    o.nstlist = 50;
    // Energies and thermostat coupling on every step: the restart's first step
    // must then apply the lambda decided at the checkpoint's last step.
    o.thermoEvery = 1;
    o.quiet = true;
    return o;
}

bool bitwiseEqual(const std::vector<Vec3d>& a, const std::vector<Vec3d>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(Vec3d)) == 0;
}

const EnergySample* sampleAt(const RunSummary& run, std::int64_t step) {
    for (const EnergySample& e : run.energies) {
        if (e.step == step) return &e;
    }
    return nullptr;
}

void expectSameSystem(const System& a, const System& b, double positionTolerance, double velocityTolerance) {
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(a.types, b.types);
    for (int i = 0; i < a.size(); ++i) {
        for (int d = 0; d < 3; ++d) {
            ASSERT_NEAR(a.positions[i][d], b.positions[i][d], positionTolerance) << "atom " << i;
            if (velocityTolerance >= 0) {
                ASSERT_NEAR(a.velocities[i][d], b.velocities[i][d], velocityTolerance) << "atom " << i;
            }
        }
    }
}

}  // namespace

TEST(MdRestart, ContinuesTheTrajectoryBitwiseAndAcrossRankCounts) {
    const fs::path dir = freshDir();
    const std::string cpt = (dir / "full.cpt").string();

    // The uninterrupted run: 200 steps, checkpoints at 100 and 200 (100 is kept as .prev).
    MdOptions full = baseOptions();
    full.steps = 200;
    full.thermostat = "v-rescale";
    full.checkpointFile = cpt;
    full.checkpointEvery = 100;
    full.trajFile = (dir / "full.gro").string();
    full.trajEvery = 50;
    full.writeGromacsDir = (dir / "gmx").string();
    const MdOptions fullResolved = resolveOptions(full, 4, false);
    const RunSummary fullRun = runOnCpu(fullResolved, 4);
    // Every step's energies, and those of step 200, where the last frame and checkpoint are.
    ASSERT_EQ(fullRun.energies.size(), 201u);
    EXPECT_EQ(fullRun.energies.back().step, 200);

    EXPECT_EQ(readCheckpointHeader(cpt).step, 200);
    const CheckpointData at100 = readCheckpoint(cpt + ".prev");
    EXPECT_EQ(at100.step, 100);
    EXPECT_EQ(at100.rlist, fullResolved.rlist);
    EXPECT_EQ(at100.thermostat, "v-rescale");
    EXPECT_NE(at100.pendingVelocityScale, 1.0);
    for (const auto& entry : fs::directory_iterator(dir)) {
        EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
    }

    // The start went to GROMACS's inputs and the first frame.
    const System start = makeLatticeSystem(2000, full.seed, full.temperature, ForceField{});
    expectSameSystem(readGro((dir / "gmx" / "conf.gro").string()).system, start, 5.000001e-4, 5.000001e-5);
    const std::vector<GroFrame> frames = readGroTrajectory(full.trajFile);
    ASSERT_EQ(frames.size(), 5u);
    for (std::size_t k = 0; k < frames.size(); ++k) {
        EXPECT_EQ(frames[k].title, fmt::format("haloex-md t= {:.5f} step= {}", 0.1 * double(k), 50 * k));
    }
    expectSameSystem(frames[0].system, start, 5.000001e-4, -1);
    expectSameSystem(frames[2].system, at100.system, 5.000001e-4, -1);

    // Restart from step 100 on the same ranks: rc, rlist, nstlist, dt and the
    // thermostat come from the checkpoint.
    MdOptions again = baseOptions();
    again.steps = 100;
    again.restartFile = cpt + ".prev";
    again.checkpointFile = (dir / "again.cpt").string();
    again.trajFile = (dir / "again.gro").string();
    again.trajEvery = 50;
    const MdOptions againResolved = resolveOptions(again, 4, false);
    EXPECT_EQ(againResolved.thermostat, "v-rescale");
    EXPECT_EQ(againResolved.rlist, fullResolved.rlist);
    EXPECT_EQ(againResolved.atoms, 2000);
    const RunSummary againRun = runOnCpu(againResolved, 4);
    EXPECT_EQ(againRun.firstStep, 100);
    ASSERT_EQ(againRun.energies.size(), 101u);
    for (const EnergySample& e : againRun.energies) {
        const EnergySample* f = sampleAt(fullRun, e.step);
        ASSERT_NE(f, nullptr) << "step " << e.step;
        SCOPED_TRACE(fmt::format("step {}", e.step));
        EXPECT_EQ(e.time, f->time);
        EXPECT_EQ(e.lj, f->lj);
        EXPECT_EQ(e.coulomb, f->coulomb);
        EXPECT_EQ(e.kinetic, f->kinetic);
        EXPECT_EQ(e.total, f->total);
        EXPECT_EQ(e.conserved, f->conserved);
        EXPECT_EQ(e.pressure, f->pressure);
    }
    EXPECT_EQ(againRun.energies.back().step, 200);

    // The final state is the same, thermostat included.
    const CheckpointData fullEnd = readCheckpoint(cpt);
    const CheckpointData againEnd = readCheckpoint(again.checkpointFile);
    EXPECT_EQ(againEnd.step, 200);
    EXPECT_TRUE(bitwiseEqual(againEnd.system.positions, fullEnd.system.positions));
    EXPECT_TRUE(bitwiseEqual(againEnd.system.velocities, fullEnd.system.velocities));
    EXPECT_EQ(againEnd.thermostatEnergy, fullEnd.thermostatEnergy);
    EXPECT_EQ(againEnd.pendingVelocityScale, fullEnd.pendingVelocityScale);
    EXPECT_EQ(againEnd.thermostatRandom, fullEnd.thermostatRandom);

    // The restart's trajectory continues after the checkpoint step.
    const std::vector<GroFrame> more = readGroTrajectory(again.trajFile);
    ASSERT_EQ(more.size(), 2u);
    EXPECT_EQ(more[0].title, frames[3].title);
    EXPECT_EQ(more[1].title, frames[4].title);
    expectSameSystem(more[1].system, frames[4].system, 0.0, -1);

    // On 2 ranks instead of 4: another summation order in float, same physics.
    MdOptions twoRanks = baseOptions();
    twoRanks.steps = 100;
    twoRanks.restartFile = cpt + ".prev";
    const RunSummary twoRun = runOnCpu(resolveOptions(twoRanks, 2, false), 2);
    ASSERT_FALSE(twoRun.energies.empty());
    const EnergySample& a = twoRun.energies.back();
    const EnergySample& b = fullRun.energies.back();
    ASSERT_EQ(a.step, b.step);
    auto relative = [](double x, double y) { return std::abs(x - y) / std::max(std::abs(y), 1e-300); };
    std::printf("2 ranks vs 4 at step %lld: relative differences LJ %.2e Coulomb %.2e kinetic %.2e total %.2e\n",
                static_cast<long long>(a.step), relative(a.lj, b.lj), relative(a.coulomb, b.coulomb),
                relative(a.kinetic, b.kinetic), relative(a.total, b.total));
    EXPECT_LE(relative(a.lj, b.lj), 1e-6) << a.lj << " vs " << b.lj;
    EXPECT_LE(relative(a.coulomb, b.coulomb), 1e-6) << a.coulomb << " vs " << b.coulomb;
    EXPECT_LE(relative(a.kinetic, b.kinetic), 1e-6) << a.kinetic << " vs " << b.kinetic;
    EXPECT_LE(relative(a.total, b.total), 1e-6) << a.total << " vs " << b.total;
    EXPECT_LE(relative(a.conserved, b.conserved), 1e-6) << a.conserved << " vs " << b.conserved;
}

TEST(MdRestart, KeepsTheCheckpointsListAndTimeStep) {
    const fs::path dir = freshDir();
    const std::string cpt = (dir / "run.cpt").string();
    CheckpointData c;
    c.system = makeLatticeSystem(1000, 5, 300.0, ForceField{});
    c.step = 400;
    c.time = 1.0;
    c.rc = 0.9;
    c.rlist = 1.05;
    c.nstlist = 40;
    c.dt = 0.0025;
    c.seed = 77;
    c.temperature = 290.0;
    c.thermostat = "v-rescale";
    c.tauT = 0.2;
    c.thermoEvery = 20;
    writeCheckpoint(cpt, c);

    MdOptions o;
    o.restartFile = cpt;
    o.steps = 10;
    // Nothing given: everything adopted.
    const MdOptions adopted = resolveOptions(o, 2, false);
    EXPECT_EQ(adopted.rc, 0.9);
    EXPECT_EQ(adopted.rlist, 1.05);
    EXPECT_EQ(adopted.nstlist, 40);
    EXPECT_EQ(adopted.dt, 0.0025);
    EXPECT_EQ(adopted.atoms, 1000);
    EXPECT_EQ(adopted.seed, 77u);
    EXPECT_EQ(adopted.temperature, 290.0);
    EXPECT_EQ(adopted.thermostat, "v-rescale");
    EXPECT_EQ(adopted.tauT, 0.2);
    // Energy steps keep their spacing (the default, steps / 10, would be 1 here).
    EXPECT_EQ(adopted.thermoEvery, 20);
    MdOptions everyGiven = o;
    everyGiven.thermoEvery = 5;
    everyGiven.explicitOptions = {"thermo-every"};
    EXPECT_EQ(resolveOptions(everyGiven, 2, false).thermoEvery, 5);

    // Given and equal: fine. Given and different: refused, naming each option.
    MdOptions same = o;
    same.rc = 0.9;
    same.nstlist = 40;
    same.explicitOptions = {"rc", "nstlist"};
    EXPECT_EQ(resolveOptions(same, 2, false).rlist, 1.05);
    MdOptions changed = o;
    changed.nstlist = 25;
    changed.dt = 0.002;
    changed.explicitOptions = {"dt"};  // the default value, but given on the command line
    const std::string msg = haloex::testing::invalidInputMessage([&] { resolveOptions(changed, 2, false); });
    EXPECT_NE(msg.find("--nstlist 25 (the checkpoint has 40)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--dt 0.002 (the checkpoint has 0.0025)"), std::string::npos) << msg;
    EXPECT_NE(msg.find(cpt), std::string::npos) << msg;
    MdOptions rlist = o;
    rlist.rlist = 1.2;
    EXPECT_NE(haloex::testing::invalidInputMessage([&] { resolveOptions(rlist, 2, false); }).find("--rlist 1.2"),
              std::string::npos);

    // Given thermostat settings win over the checkpoint's.
    MdOptions thermostat = o;
    thermostat.thermostat = "none";
    thermostat.explicitOptions = {"thermostat"};
    EXPECT_EQ(resolveOptions(thermostat, 2, false).thermostat, "none");

    // The buffer tolerance only chooses rlist and nstlist, which the checkpoint
    // fixes: given on a restart it was silently ignored (issue 38), now refused.
    MdOptions tolerance = o;
    tolerance.bufferTolerance = 0.001;
    tolerance.explicitOptions = {"buffer-tolerance"};
    const std::string toleranceMsg = haloex::testing::invalidInputMessage([&] { resolveOptions(tolerance, 2, false); });
    EXPECT_NE(toleranceMsg.find("--buffer-tolerance 0.001 with --restart"), std::string::npos) << toleranceMsg;
    EXPECT_NE(toleranceMsg.find("nstlist 40"), std::string::npos) << toleranceMsg;

    MdOptions gro = o;
    gro.groFile = "start.gro";
    EXPECT_NE(haloex::testing::invalidInputMessage([&] { resolveOptions(gro, 2, false); }).find("--gro"),
              std::string::npos);
    MdOptions atoms = o;
    atoms.atoms = 2000;
    EXPECT_NE(haloex::testing::invalidInputMessage([&] { resolveOptions(atoms, 2, false); }).find("1000 atoms"),
              std::string::npos);

    // The engine refuses options that were not resolved against the checkpoint.
    MdOptions bypass = adopted;
    bypass.rlist = 1.1;
    const std::string engineMsg = haloex::testing::invalidInputMessage([&] { runOnCpu(bypass, 1); });
    EXPECT_NE(engineMsg.find("--rlist 1.1 (the checkpoint has 1.05)"), std::string::npos) << engineMsg;

    MdOptions foreign = o;
    foreign.restartFile = std::string(HALOEX_TEST_DATA_DIR) + "/ref-3000.gro";
    EXPECT_NE(haloex::testing::invalidInputMessage([&] {
                  resolveOptions(foreign, 2, false);
              }).find("not a haloex checkpoint"),
              std::string::npos);
}

// Defect 3: a restart with the same --traj after a kill appended to the whole
// file, so the frames written after the checkpoint came twice and out of
// order. The checkpoint records where the trajectory stood; a restart from an
// older checkpoint (here .prev, as after a kill between checkpoints) cuts the
// later frames and writes them again, identically.
TEST(MdRestart, ARestartFromAnOlderCheckpointContinuesTheSameTrajectoryWithoutDuplicates) {
    const fs::path dir = freshDir();
    MdOptions full = baseOptions();
    full.atoms = 1000;
    full.steps = 200;
    full.checkpointFile = (dir / "state.cpt").string();
    full.checkpointEvery = 100;
    full.trajFile = (dir / "traj.gro").string();
    full.trajEvery = 25;
    runOnCpu(resolveOptions(full, 2, false), 2);
    const std::vector<GroFrame> uninterrupted = readGroTrajectory(full.trajFile);
    ASSERT_EQ(uninterrupted.size(), 9u);
    const CheckpointData at100 = readCheckpoint(full.checkpointFile + ".prev");
    ASSERT_EQ(at100.outputs.size(), 1u);
    EXPECT_EQ(at100.outputs[0].role, "--traj");
    EXPECT_EQ(at100.outputs[0].records, 5);
    EXPECT_EQ(at100.outputs[0].lastStep, 100);

    MdOptions again = baseOptions();
    again.atoms = 0;  // the checkpoint's
    again.steps = 100;
    again.restartFile = full.checkpointFile + ".prev";
    again.checkpointFile = full.checkpointFile;
    again.trajFile = full.trajFile;
    again.trajEvery = 25;
    runOnCpu(resolveOptions(again, 2, false), 2);
    const std::vector<GroFrame> continued = readGroTrajectory(full.trajFile);
    ASSERT_EQ(continued.size(), uninterrupted.size());
    for (std::size_t k = 0; k < continued.size(); ++k) {
        EXPECT_EQ(continued[k].title, uninterrupted[k].title);
        expectSameSystem(continued[k].system, uninterrupted[k].system, 0.0, -1);
    }
    EXPECT_EQ(readCheckpoint(again.checkpointFile).outputs[0].records, 9);
}

// Issue 37: haloex-md's restarts continue the outputs their checkpoint
// recorded and write their checkpoints into the --restart file
// (MdOptions::continueRecordedOutputs, as mdrun -cpi); the library's
// restarts write only what they are told, as before.
TEST(MdRestart, ContinuingTheRecordedOutputsIsHaloexMdsDefaultNotTheLibrarys) {
    const fs::path dir = freshDir();
    MdOptions first = baseOptions();
    first.atoms = 1000;
    first.steps = 20;
    first.thermoEvery = 10;
    first.checkpointFile = (dir / "state.cpt").string();
    first.trajFile = (dir / "traj.gro").string();
    first.trajEvery = 10;
    runOnCpu(resolveOptions(first, 2, false), 2);
    const std::string frames = haloex::testing::fileContents(first.trajFile);
    const std::string checkpoint = haloex::testing::fileContents(first.checkpointFile);

    MdOptions library = baseOptions();
    library.atoms = 0;
    library.steps = 20;
    library.restartFile = first.checkpointFile;
    const MdOptions asTold = resolveOptions(library, 2, false);
    EXPECT_TRUE(asTold.trajFile.empty());
    EXPECT_TRUE(asTold.checkpointFile.empty());
    EXPECT_TRUE(asTold.continuedOutputs.empty());
    runOnCpu(asTold, 2);
    EXPECT_EQ(haloex::testing::fileContents(first.trajFile), frames);
    EXPECT_EQ(haloex::testing::fileContents(first.checkpointFile), checkpoint);

    MdOptions mdrunLike = library;
    mdrunLike.continueRecordedOutputs = true;
    const MdOptions continued = resolveOptions(mdrunLike, 2, false);
    EXPECT_EQ(fs::absolute(continued.trajFile).lexically_normal(), fs::absolute(first.trajFile).lexically_normal());
    EXPECT_EQ(continued.checkpointFile, first.checkpointFile);
    EXPECT_EQ(continued.trajEvery, 10);
    ASSERT_EQ(continued.continuedOutputs.size(), 1u);
    runOnCpu(continued, 2);
    EXPECT_EQ(readGroTrajectory(first.trajFile).size(), 5u);  // steps 0 to 40
    EXPECT_EQ(readCheckpointHeader(first.checkpointFile).step, 40);
}
