// Checkpoints under attack and under failure (labels unit and faults): a link
// planted at the previous copy's name between two checkpoints, a previous copy
// that cannot be kept, a kill at every point of the replacement (with and
// without RENAME_EXCHANGE), a missing checkpoint whose previous copy exists,
// and the hard-linked pair older versions left. After each: the link's target
// untouched, a restartable checkpoint under one of the two names, and never
// the two names on one file.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/detail/core/test_hooks.hpp"
#include "haloex/md/checkpoint.hpp"
#include "haloex/md/system.hpp"
#include "test_temp_dir.hpp"

using namespace haloex;
using namespace haloex::md;
namespace fs = std::filesystem;

namespace {

fs::path freshDir() { return haloex::testing::freshTestDir("haloex_cpt_faults"); }

CheckpointData sampleAt(std::int64_t step) {
    ForceField ff;
    CheckpointData d;
    d.system = makeLatticeSystem(1000, 7, 300.0, ff);
    d.step = step;
    d.dt = 0.002;
    d.time = static_cast<double>(step) * d.dt;
    d.rc = 0.9;
    d.rlist = 1.0;
    d.nstlist = 10;
    d.seed = 7;
    d.temperature = 300.0;
    return d;
}

std::string contents(const fs::path& path) { return haloex::testing::fileContents(path); }

std::optional<struct stat> linkStat(const fs::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
    return st;
}

// Neither name is a second name of the other's file, and each is a file of its own.
void expectTwoSeparateFiles(const fs::path& a, const fs::path& b) {
    const auto x = linkStat(a), y = linkStat(b);
    if (x) {
        EXPECT_EQ(x->st_nlink, 1u) << a << " has another name";
    }
    if (y) {
        EXPECT_EQ(y->st_nlink, 1u) << b << " has another name";
    }
    if (x && y) {
        EXPECT_FALSE(x->st_dev == y->st_dev && x->st_ino == y->st_ino) << a << " and " << b << " are one file";
    }
}

// The step of the checkpoint at `path`, or nullopt when it cannot be read.
std::optional<std::int64_t> stepOf(const fs::path& path) {
    try {
        return readCheckpoint(path.string()).step;
    } catch (const Error&) {
        return std::nullopt;
    }
}

std::vector<std::string> temporariesIn(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        if (name.find(".tmp.") != std::string::npos) names.push_back(name);
    }
    return names;
}

// Sets an environment variable for the scope (the test hooks read it).
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;
    ~ScopedEnv() { ::unsetenv(name_); }

private:
    const char* name_;
};

}  // namespace

TEST(CheckpointFaults, ALinkPlantedAtThePreviousCopyBetweenTwoCheckpointsIsReplacedNotWrittenThrough) {
    for (const bool exchange : {true, false}) {
        SCOPED_TRACE(exchange ? "with RENAME_EXCHANGE" : "without RENAME_EXCHANGE (fallback)");
        if (!exchange && !testHooksEnabled()) GTEST_SKIP() << "this build has no test hooks (HALOEX_TEST_HOOKS=OFF)";
        std::optional<ScopedEnv> noExchange;
        if (!exchange) noExchange.emplace("HALOEX_TEST_NO_RENAME_EXCHANGE", "1");
        const fs::path dir = freshDir();
        const fs::path cpt = dir / "run.cpt", prev = dir / "run.cpt.prev", victim = dir / "secret.txt";
        haloex::testing::writeFileText(victim, "the victim's secret\n");
        EXPECT_EQ(writeCheckpoint(cpt.string(), sampleAt(100)), "");
        // Another user's link, planted after the run's checks, between two checkpoints.
        fs::create_symlink(victim, prev);
        EXPECT_EQ(writeCheckpoint(cpt.string(), sampleAt(200)), "");
        EXPECT_EQ(contents(victim), "the victim's secret\n");
        EXPECT_FALSE(fs::is_symlink(prev));
        EXPECT_EQ(stepOf(cpt), 200);
        EXPECT_EQ(stepOf(prev), 100);
        expectTwoSeparateFiles(cpt, prev);
        EXPECT_EQ(temporariesIn(dir), std::vector<std::string>{});
        // And again, a dangling link this time.
        fs::remove(prev);
        fs::create_symlink(dir / "no-such-file", prev);
        EXPECT_EQ(writeCheckpoint(cpt.string(), sampleAt(300)), "");
        EXPECT_FALSE(fs::exists(dir / "no-such-file"));
        EXPECT_EQ(stepOf(cpt), 300);
        EXPECT_EQ(stepOf(prev), 200);
        expectTwoSeparateFiles(cpt, prev);
    }
}

// The attack of issue 38 as it happens: in a shared sticky directory (/tmp,
// a project's scratch) another user's link at the previous copy's name cannot
// be removed by the run, which used to copy the old checkpoint through it
// onto the file it points to. Two users need root: the run is a child
// process that drops to `nobody`.
TEST(CheckpointFaults, AnotherUsersLinkInAStickyDirectoryIsNeverWrittenThrough) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root, to act as two users (the run and the one who plants the link)";
    constexpr uid_t kNobody = 65534;
    const fs::path dir = freshDir();
    const fs::path shared = dir / "shared", home = dir / "home";
    fs::create_directories(shared);
    fs::create_directories(home);
    ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
    ASSERT_EQ(::chown(home.c_str(), kNobody, kNobody), 0);
    const fs::path victim = home / "secret.txt";
    haloex::testing::writeFileText(victim, "the victim's secret\n");
    ASSERT_EQ(::chown(victim.c_str(), kNobody, kNobody), 0);
    // Planted by root, the "other user": the run cannot remove or replace it.
    fs::create_symlink(victim, shared / "run.cpt.prev");
    const fs::path cpt = shared / "run.cpt";
    EXPECT_EXIT(
        {
            if (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) std::_Exit(2);
            writeCheckpoint(cpt.string(), sampleAt(100));
            const std::string why = writeCheckpoint(cpt.string(), sampleAt(200));
            // Said, with the reason (a rename onto another user's name in a sticky directory).
            std::_Exit(why.find("could not be kept") != std::string::npos ? 0 : 3);
        },
        ::testing::ExitedWithCode(0), "");
    EXPECT_EQ(contents(victim), "the victim's secret\n");
    EXPECT_EQ(stepOf(cpt), 200);
    EXPECT_TRUE(fs::is_symlink(shared / "run.cpt.prev"));
}

TEST(CheckpointFaults, ThePreviousCopyIsAlwaysAFileOfItsOwn) {
    const fs::path dir = freshDir();
    const fs::path cpt = dir / "run.cpt", prev = dir / "run.cpt.prev";
    for (std::int64_t k = 1; k <= 3; ++k) {
        writeCheckpoint(cpt.string(), sampleAt(100 * k));
        expectTwoSeparateFiles(cpt, prev);
    }
    EXPECT_EQ(stepOf(cpt), 300);
    EXPECT_EQ(stepOf(prev), 200);
}

TEST(CheckpointFaults, APreviousCopyThatCannotBeKeptIsReportedAndTheNewCheckpointWritten) {
    const fs::path dir = freshDir();
    const fs::path cpt = dir / "run.cpt", prev = dir / "run.cpt.prev";
    writeCheckpoint(cpt.string(), sampleAt(100));
    // No rename can replace a non-empty directory (as no rename can replace
    // another user's link in a sticky directory).
    fs::create_directories(prev / "inside");
    const std::string why = writeCheckpoint(cpt.string(), sampleAt(200));
    EXPECT_NE(why.find("could not be kept as " + prev.string()), std::string::npos) << why;
    EXPECT_EQ(stepOf(cpt), 200);
    EXPECT_TRUE(fs::is_directory(prev / "inside"));
    EXPECT_EQ(temporariesIn(dir), std::vector<std::string>{});
}

TEST(CheckpointFaults, AKillAtAnyPointOfTheReplacementLeavesARestartableCheckpointUnderOneName) {
    if (!testHooksEnabled()) GTEST_SKIP() << "this build has no test hooks (HALOEX_TEST_HOOKS=OFF)";
    // The default ("fast") death tests fork here, so the child writes into
    // this test's directory (a re-executed child would have its own).
    struct Case {
        const char* point;
        bool exchange;
        std::int64_t cptStep, prevStep;  // what each name holds after the kill (-1: nothing)
    };
    // With RENAME_EXCHANGE the checkpoint's name always holds a whole
    // checkpoint (after "exchanged" the one of step 200 is under the
    // temporary's name, so the previous copy is still the one of step 100).
    const Case cases[] = {{"synced", true, 200, 100},
                          {"exchanged", true, 300, 100},
                          {"synced", false, 200, 100},
                          {"moved-aside", false, -1, 200}};
    for (const Case& c : cases) {
        SCOPED_TRACE(fmt::format("killed at '{}' {}", c.point, c.exchange ? "with exchange" : "without exchange"));
        const fs::path dir = freshDir();
        const fs::path cpt = dir / "run.cpt", prev = dir / "run.cpt.prev";
        {
            std::optional<ScopedEnv> noExchange;
            if (!c.exchange) noExchange.emplace("HALOEX_TEST_NO_RENAME_EXCHANGE", "1");
            writeCheckpoint(cpt.string(), sampleAt(100));
            writeCheckpoint(cpt.string(), sampleAt(200));
            EXPECT_EXIT(
                {
                    ::setenv("HALOEX_TEST_CRASH_IN_REPLACE", c.point, 1);
                    writeCheckpoint(cpt.string(), sampleAt(300));
                    std::_Exit(0);  // not reached
                },
                ::testing::KilledBySignal(SIGKILL), "");
        }
        EXPECT_EQ(stepOf(cpt).value_or(-1), c.cptStep);
        EXPECT_EQ(stepOf(prev).value_or(-1), c.prevStep);
        expectTwoSeparateFiles(cpt, prev);
        if (c.cptStep < 0) {
            // The restart is told where the checkpoint is.
            try {
                readCheckpoint(cpt.string());
                ADD_FAILURE() << "read a missing checkpoint";
            } catch (const Error& e) {
                EXPECT_NE(std::string(e.what()).find("restart from it with --restart " + prev.string()),
                          std::string::npos)
                    << e.what();
            }
        }
        // The next checkpoint of a restarted run puts everything right.
        writeCheckpoint(cpt.string(), sampleAt(400));
        EXPECT_EQ(stepOf(cpt), 400);
        expectTwoSeparateFiles(cpt, prev);
    }
}

TEST(CheckpointFaults, AHardLinkedPreviousCopyOfOlderVersionsIsSeparated) {
    const fs::path dir = freshDir();
    const fs::path cpt = dir / "run.cpt", prev = dir / "run.cpt.prev";
    writeCheckpoint(cpt.string(), sampleAt(100));
    // What an older haloex-md left after a failed or killed checkpoint write.
    ASSERT_EQ(::link(cpt.c_str(), prev.c_str()), 0);
    const std::optional<std::string> note = separateHardLinkedPreviousCheckpoint(cpt.string());
    ASSERT_TRUE(note.has_value());
    EXPECT_NE(note->find(prev.string()), std::string::npos) << *note;
    EXPECT_FALSE(fs::exists(prev));
    EXPECT_EQ(stepOf(cpt), 100);
    expectTwoSeparateFiles(cpt, prev);
    // Separate files (and missing ones) are left alone.
    EXPECT_EQ(separateHardLinkedPreviousCheckpoint(cpt.string()), std::nullopt);
    writeCheckpoint(cpt.string(), sampleAt(200));
    EXPECT_EQ(separateHardLinkedPreviousCheckpoint(cpt.string()), std::nullopt);
    EXPECT_EQ(stepOf(prev), 100);
    // A link at the previous copy's name is never taken for a second name.
    fs::remove(prev);
    fs::create_symlink(cpt, prev);
    EXPECT_EQ(separateHardLinkedPreviousCheckpoint(cpt.string()), std::nullopt);
    EXPECT_TRUE(fs::is_symlink(prev));
}
