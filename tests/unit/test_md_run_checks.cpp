// What a haloex-md run checks before its first step: numeric options (range,
// NaN, 64-bit step counts) and its files (an output that would overwrite an
// input or another output).
// The command-line view of the same checks: tests/cli/test_md_cli.py.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>

#include "haloex/core/error.hpp"
#include "haloex/md/engine.hpp"
#include "haloex/md/option_ranges.hpp"
#include "haloex/md/run_files.hpp"
#include "test_temp_dir.hpp"

using namespace haloex;
using namespace haloex::md;
namespace fs = std::filesystem;

namespace {

template <class Body>
std::string errorOf(Body body) {
    try {
        body();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(RunChecks, StepCountsAre64BitAndNeverWrapToZero) {
    MdOptions o;
    o.steps = 42949672960;  // steps/10 = 2^32 used to become thermo-every 0: SIGFPE
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
    const std::string message = errorOf([&] { resolveOptions(o, 2, false); });
    EXPECT_TRUE(contains(message, expected)) << message;
    EXPECT_TRUE(contains(message, "; use ")) << message;  // the accepted range
}

}  // namespace

TEST(RunChecks, NumericOptionsOutOfRangeAreRefusedNamingTheRange) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    expectRefused([](MdOptions& o) { o.steps = 2'000'000'000'000'000; }, "--steps 2000000000000000: out of range");
    expectRefused([](MdOptions& o) { o.steps = -1; }, "--steps -1: out of range");
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
    requireOptionRanges(MdOptions{});  // the defaults are in range
}

TEST(RunChecks, AnOutputMayNotOverwriteAnInputOrAnotherOutput) {
    const fs::path dir = haloex::testing::freshTestDir("haloex_run_files");
    std::ofstream(dir / "in.gro") << "x\n";
    fs::create_hard_link(dir / "in.gro", dir / "hard.gro");
    MdOptions o;
    o.groFile = (dir / "in.gro").string();
    o.trajFile = (dir / "hard.gro").string();  // the same file under another name
    EXPECT_TRUE(contains(errorOf([&] { checkRunFiles(o); }), "--traj " + o.trajFile + " is the same file as the "
                                                                 "input --gro " + o.groFile));
    o.trajFile = (dir / "traj.gro").string();
    o.jsonFile = (dir / "sub" / ".." / "traj.gro").string();
    fs::create_directory(dir / "sub");
    EXPECT_TRUE(
        contains(errorOf([&] { checkRunFiles(o); }), "are the same file: one output would overwrite the other"));
    o.jsonFile = (dir / "run.json").string();
    o.checkpointFile = (dir / "state.cpt").string();
    EXPECT_EQ(errorOf([&] { checkRunFiles(o); }), "");
    // The previous checkpoint is an output too.
    o.jsonFile = o.checkpointFile + ".prev";
    EXPECT_TRUE(contains(errorOf([&] { checkRunFiles(o); }), "--cpt (its previous copy)"));
    // Continuing in place is the one exception.
    MdOptions restart;
    std::ofstream(dir / "state.cpt") << "x";
    restart.restartFile = (dir / "state.cpt").string();
    restart.checkpointFile = (dir / "state.cpt").string();
    EXPECT_EQ(errorOf([&] { checkRunFiles(restart); }), "");
    restart.trajFile = (dir / "state.cpt").string();
    EXPECT_TRUE(contains(errorOf([&] { checkRunFiles(restart); }), "is the same file as the input --restart"));
    EXPECT_EQ(runFiles(restart).size(), 4u);  // --restart, --cpt, its .prev, --traj
}
