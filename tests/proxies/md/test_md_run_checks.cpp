// What a haloex-md run checks before its first step: numeric options (range,
// NaN, 64-bit step counts), start configurations with atoms too close, and
// its files (an output that would overwrite an input or another output).
// The command-line view of the same checks: tests/cli/test_md_cli.py.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>

#include "haloex/core/error.hpp"
#include "haloex/md/close_contacts.hpp"
#include "haloex/md/engine.hpp"
#include "haloex/md/option_ranges.hpp"
#include "haloex/md/run_files.hpp"
#include "haloex/md/system.hpp"
#include "test_refusal.hpp"
#include "test_temp_dir.hpp"

using namespace haloex;
using namespace haloex::md;
namespace fs = std::filesystem;

namespace {

using haloex::testing::errorMessageOf;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

System twoAtoms(Vec3d a, Vec3d b, double box) {
    System s;
    s.box.length = {box, box, box};
    s.positions = {a, b};
    s.velocities.assign(2, Vec3d{});
    s.types = {0, 1};
    s.globalIds = {7, 3};
    return s;
}

}  // namespace

TEST(RunChecks, StepCountsAre64BitAndNeverWrapToZero) {
    MdOptions o;
    o.steps = 42949672960;           // steps/10 = 2^32 used to become thermo-every 0: SIGFPE
    o.checkpointEvery = 2147483647;  // rounded up to a search step used to overflow int
    o.checkpointFile = "x.cpt";
    const MdOptions r = resolveOptions(o, 1, false);
    EXPECT_EQ(r.thermoEvery, 4294967296);
    EXPECT_EQ(r.checkpointEvery, 2147483650);
}

namespace {

// resolveOptions on the defaults changed by `set` must refuse with `expected`.
void expectRefused(const std::function<void(MdOptions&)>& set, const std::string& expected) {
    SCOPED_TRACE(expected);
    MdOptions o;
    set(o);
    const std::string message = errorMessageOf([&] { resolveOptions(o, 2, false); });
    EXPECT_TRUE(contains(message, expected)) << message;
    EXPECT_TRUE(contains(message, "; use ")) << message;  // the accepted range
}

}  // namespace

TEST(RunChecks, NumericOptionsOutOfRangeAreRefusedNamingTheRange) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    expectRefused([](MdOptions& o) { o.steps = 2'000'000'000'000'000; }, "--steps 2000000000000000: out of range");
    expectRefused([](MdOptions& o) { o.steps = -2; }, "--steps -2: out of range");  // -1: until stopped
    expectRefused([](MdOptions& o) { o.atoms = 4294968296; }, "--atoms 4294968296: out of range");
    expectRefused([](MdOptions& o) { o.virtualRanks = -3; },
                  "--ranks -3: out of range; use 0 (automatic: 4) or 1 to 1024");
    expectRefused([](MdOptions& o) { o.tauT = 0.0; }, "--tau-t 0: out of range");
    expectRefused([](MdOptions& o) { o.tauT = -1.0; }, "--tau-t -1: out of range");
    expectRefused([nan](MdOptions& o) { o.tauT = nan; }, "--tau-t nan: out of range");
    expectRefused([nan](MdOptions& o) { o.bufferTolerance = nan; }, "--buffer-tolerance nan: out of range");
    expectRefused([inf](MdOptions& o) { o.temperature = inf; }, "--temperature inf: out of range");
    expectRefused([inf](MdOptions& o) { o.rlist = inf; }, "--rlist inf: out of range");
    expectRefused([](MdOptions& o) { o.thermoEvery = -5; }, "--thermo-every -5: out of range");
    expectRefused([](MdOptions& o) { o.trajEvery = -1; }, "--traj-every -1: out of range");
    expectRefused([](MdOptions& o) { o.waitTimeoutSeconds = -1.0; }, "--wait-timeout -1: out of range");
    expectRefused([](MdOptions& o) { o.stepsPerGraph = -1; }, "--steps-per-graph -1: out of range");
    expectRefused([](MdOptions& o) { o.stepsPerGraph = kMaxStepsPerGraph + 1; }, "--steps-per-graph 65: out of range");
    requireOptionRanges(MdOptions{});  // the defaults are in range
}

TEST(RunChecks, ClosestContactSeesThroughThePeriodicBoundary) {
    // 0.03 nm apart across the x faces of a 3 nm box.
    const System s = twoAtoms({0.01, 1.0, 1.0}, {2.98, 1.0, 1.0}, 3.0);
    const auto contact = closestContact(s, 0.05);
    ASSERT_TRUE(contact.has_value());
    EXPECT_EQ(contact->first, 3);
    EXPECT_EQ(contact->second, 7);
    EXPECT_NEAR(contact->distance, 0.03, 1e-12);
    EXPECT_EQ(contact->pairs, 1);
    EXPECT_FALSE(closestContact(s, 0.02).has_value());
    const ForceField ff;
    EXPECT_FALSE(closestContact(makeLatticeSystem(3000, 11, 300.0, ff), 0.05).has_value());
}

TEST(RunChecks, ClosestContactFindsTheClosestOfManyPairs) {
    const ForceField ff;
    System s = makeLatticeSystem(3000, 5, 300.0, ff);
    s.positions[100] = s.positions[2000] + Vec3d{0.0, 0.04, 0.0};
    s.positions[17] = s.positions[5] + Vec3d{0.01, 0.0, 0.0};
    const auto contact = closestContact(s, 0.05);
    ASSERT_TRUE(contact.has_value());
    EXPECT_EQ(contact->first, 5);
    EXPECT_EQ(contact->second, 17);
    EXPECT_NEAR(contact->distance, 0.01, 1e-9);
    EXPECT_EQ(contact->pairs, 2);
    const std::string message = errorMessageOf([&] { requireNoCloseContacts(s, 0.05, "--gro start.gro", true); });
    EXPECT_TRUE(contains(message, "--gro start.gro: atoms 5 and 17 (global ids, lines 8 and 20 of the file) are only "
                                  "0.0100 nm apart, closer than --min-distance 0.05 nm (2 pair(s) that close)"))
        << message;
    EXPECT_TRUE(contains(message, "--min-distance 0 turns this check off")) << message;
    requireNoCloseContacts(s, 0.0, "--gro start.gro", true);  // off
    expectRefused([](MdOptions& o) { o.minDistance = -0.1; }, "--min-distance -0.1: out of range");
}

TEST(RunChecks, AnOutputMayNotOverwriteAnInputOrAnotherOutput) {
    const fs::path dir = haloex::testing::freshTestDir("haloex_run_files");
    std::ofstream(dir / "in.gro") << "x\n";
    fs::create_hard_link(dir / "in.gro", dir / "hard.gro");
    MdOptions o;
    o.groFile = (dir / "in.gro").string();
    o.trajFile = (dir / "hard.gro").string();  // the same file under another name
    EXPECT_TRUE(contains(errorMessageOf([&] { checkRunFiles(o); }), "--traj " + o.trajFile +
                                                                        " is the same file as the "
                                                                        "input --gro " +
                                                                        o.groFile));
    o.trajFile = (dir / "traj.gro").string();
    o.jsonFile = (dir / "sub" / ".." / "traj.gro").string();
    fs::create_directory(dir / "sub");
    EXPECT_TRUE(
        contains(errorMessageOf([&] { checkRunFiles(o); }), "are the same file: one output would overwrite the other"));
    o.jsonFile = (dir / "run.json").string();
    o.checkpointFile = (dir / "state.cpt").string();
    EXPECT_EQ(errorMessageOf([&] { checkRunFiles(o); }), "");
    // The previous checkpoint is an output too.
    o.jsonFile = o.checkpointFile + ".prev";
    EXPECT_TRUE(contains(errorMessageOf([&] { checkRunFiles(o); }), "--cpt (its previous copy)"));
    // Continuing in place is the one exception.
    MdOptions restart;
    std::ofstream(dir / "state.cpt") << "x";
    restart.restartFile = (dir / "state.cpt").string();
    restart.checkpointFile = (dir / "state.cpt").string();
    EXPECT_EQ(errorMessageOf([&] { checkRunFiles(restart); }), "");
    restart.trajFile = (dir / "state.cpt").string();
    EXPECT_TRUE(contains(errorMessageOf([&] { checkRunFiles(restart); }), "is the same file as the input --restart"));
    EXPECT_EQ(runFiles(restart).size(), 4u);  // --restart, --cpt, its .prev, --traj
}

// CUDA graphs: on by default wherever the transport allows them, except nccl,
// whose capture has not run on two GPUs yet: there only --cuda-graphs 1 given
// on the command line turns them on (md_bench's "nccl graphs=1" variant).
TEST(RunChecks, CudaGraphsForNcclOnlyWhenAskedFor) {
    haloex::md::MdOptions o;
    EXPECT_TRUE(haloex::md::cudaGraphsFor(o, "nvshmem"));
    EXPECT_TRUE(haloex::md::cudaGraphsFor(o, "staged"));
    EXPECT_FALSE(haloex::md::cudaGraphsFor(o, "nccl"));
    o.cudaGraphsGiven = true;
    EXPECT_TRUE(haloex::md::cudaGraphsFor(o, "nccl"));
    o.cudaGraphs = false;
    EXPECT_FALSE(haloex::md::cudaGraphsFor(o, "nccl"));
    EXPECT_FALSE(haloex::md::cudaGraphsFor(o, "nvshmem"));
}

// --fuse-update fuses the force sums into the update of a GPU rank: the CPU
// reference refuses it, naming why; a GPU run on any rank count takes it.
TEST(RunChecks, TheFusedUpdateIsForTheGpu) {
    MdOptions o;
    o.fuseUpdate = Toggle::On;
    const std::string cpu = errorMessageOf([&] { resolveOptions(o, 1, false); });
    EXPECT_TRUE(contains(cpu, "--fuse-update 1 with the CPU reference")) << cpu;
    EXPECT_TRUE(contains(cpu, "--fuse-update 0")) << cpu;
    EXPECT_EQ(resolveOptions(o, 1, true).fuseUpdate, Toggle::On);
    o.grid = "2x1x1";
    EXPECT_EQ(resolveOptions(o, 2, true).fuseUpdate, Toggle::On);
}

// --steps-per-graph N > 1 captures N GPU steps in one CUDA graph: the CPU
// reference and a run without graphs refuse it, naming why; 1 runs anywhere.
TEST(RunChecks, GraphsOfSeveralStepsNeedTheGpuWithGraphs) {
    MdOptions o;
    o.stepsPerGraph = 4;
    const std::string cpu = errorMessageOf([&] { resolveOptions(o, 1, false); });
    EXPECT_TRUE(contains(cpu, "--steps-per-graph 4 with the CPU reference")) << cpu;
    EXPECT_EQ(resolveOptions(o, 1, true).stepsPerGraph, 4);
    o.cudaGraphs = false;
    const std::string noGraphs = errorMessageOf([&] { resolveOptions(o, 1, true); });
    EXPECT_TRUE(contains(noGraphs, "with --cuda-graphs 0")) << noGraphs;
    EXPECT_TRUE(contains(noGraphs, "--steps-per-graph 1")) << noGraphs;
    o.stepsPerGraph = 1;
    EXPECT_EQ(resolveOptions(o, 1, false).stepsPerGraph, 1);
}

// --steps-per-graph 0, the default, is kAutoStepsPerGraph on the GPU with
// graphs and 1 without them or on the CPU reference (never refused).
TEST(RunChecks, AutomaticStepsPerGraphIsSeveralOnlyOnTheGpuWithGraphs) {
    MdOptions o;
    EXPECT_EQ(o.stepsPerGraph, 0);
    EXPECT_EQ(resolveOptions(o, 1, true).stepsPerGraph, kAutoStepsPerGraph);
    EXPECT_GT(kAutoStepsPerGraph, 1);
    EXPECT_EQ(resolveOptions(o, 1, false).stepsPerGraph, 1);
    o.cudaGraphs = false;
    EXPECT_EQ(resolveOptions(o, 1, true).stepsPerGraph, 1);
}

// --sort-atoms orders the GPU's device-resident atoms: the CPU reference
// refuses it, naming why; a GPU run on any rank count takes it (a search on
// the host is refused by the engine: test_md_engine_gpu).
TEST(RunChecks, CellOrderIsForTheGpu) {
    MdOptions o;
    o.sortAtoms = Toggle::On;
    const std::string cpu = errorMessageOf([&] { resolveOptions(o, 1, false); });
    EXPECT_TRUE(contains(cpu, "--sort-atoms 1 with the CPU reference")) << cpu;
    EXPECT_TRUE(contains(cpu, "--sort-atoms 0")) << cpu;
    EXPECT_EQ(resolveOptions(o, 1, true).sortAtoms, Toggle::On);
    o.grid = "2x1x1";
    EXPECT_EQ(resolveOptions(o, 2, true).sortAtoms, Toggle::On);
}
