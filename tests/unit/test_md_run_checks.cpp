// What a haloex-md run checks before its first step: its files (an output
// that would overwrite an input or another output).
// The command-line view of the same checks: tests/cli/test_md_cli.py.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "haloex/core/error.hpp"
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
