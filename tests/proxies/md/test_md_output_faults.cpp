// Outputs at names derived from a user's path, under attack and failure
// (label faults): links planted at the H5MD trajectory's name, at a backup's
// name and at the --write-gromacs directory are never followed, and a full disk
// leaves no half-written set of GROMACS inputs.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/detail/core/safe_file.hpp"
#include "haloex/md/engine.hpp"
#include "haloex/md/gromacs_export.hpp"
#include "haloex/md/h5md_trajectory.hpp"
#include "haloex/md/output_backup.hpp"
#include "haloex/md/system.hpp"
#include "test_refusal.hpp"
#include "test_temp_dir.hpp"

using namespace haloex;
using namespace haloex::md;
namespace fs = std::filesystem;

namespace {

fs::path freshDir() { return haloex::testing::freshTestDir("haloex_output_faults"); }
std::string contents(const fs::path& path) { return haloex::testing::fileContents(path); }
void writeText(const fs::path& path, const std::string& text) { haloex::testing::writeFileText(path, text); }

std::vector<std::string> filesIn(const fs::path& dir) { return haloex::testing::fileNamesIn(dir); }

using haloex::testing::errorMessageOf;

MdOptions gromacsOptions() {
    MdOptions o;
    o.atoms = 1000;
    o.steps = 100;
    o.nstlist = 10;
    o.thermoEvery = 10;
    return resolveOptions(o, 1, false);
}

}  // namespace

TEST(OutputFaults, AnH5mdTrajectoryIsNeverCreatedThroughALink) {
    if (!h5mdAvailable()) GTEST_SKIP() << "built without HDF5: " << h5mdUnavailableReason();
    const fs::path dir = freshDir();
    writeText(dir / "victim", "precious\n");
    fs::create_symlink(dir / "victim", dir / "traj.h5");
    // H5F_ACC_TRUNC used to truncate the link's target.
    const std::string error = errorMessageOf(
        [&] { H5mdTrajectory traj((dir / "traj.h5").string(), "--traj", H5mdTrajectory::Mode::Create, 5); });
    EXPECT_NE(error.find("symbolic link"), std::string::npos) << error;
    EXPECT_EQ(contents(dir / "victim"), "precious\n");
    EXPECT_TRUE(fs::is_symlink(dir / "traj.h5"));
    EXPECT_EQ(filesIn(dir), (std::vector<std::string>{"traj.h5", "victim"}));  // no temporary left
}

TEST(OutputFaults, AnH5mdTrajectoryIsNeverContinuedThroughALink) {
    if (!h5mdAvailable()) GTEST_SKIP() << "built without HDF5: " << h5mdUnavailableReason();
    const fs::path dir = freshDir();
    { H5mdTrajectory real((dir / "real.h5").string(), "--traj", H5mdTrajectory::Mode::Create, 5); }
    const auto before = fs::last_write_time(dir / "real.h5");
    fs::create_symlink(dir / "real.h5", dir / "traj.h5");
    const std::string error = errorMessageOf(
        [&] { H5mdTrajectory traj((dir / "traj.h5").string(), "--traj", H5mdTrajectory::Mode::Append, 5); });
    EXPECT_NE(error.find("symbolic link"), std::string::npos) << error;
    EXPECT_EQ(fs::last_write_time(dir / "real.h5"), before);
}

TEST(OutputFaults, AnH5mdTrajectoryReplacesARegularFileByRename) {
    if (!h5mdAvailable()) GTEST_SKIP() << "built without HDF5: " << h5mdUnavailableReason();
    const fs::path dir = freshDir();
    writeText(dir / "traj.h5", "an older file\n");
    fs::create_hard_link(dir / "traj.h5", dir / "other-name");
    { H5mdTrajectory traj((dir / "traj.h5").string(), "--traj", H5mdTrajectory::Mode::Create, 5); }
    // A new file under the name: the old file's other name still holds it.
    EXPECT_EQ(contents(dir / "other-name"), "an older file\n");
    EXPECT_EQ(filesIn(dir), (std::vector<std::string>{"other-name", "traj.h5"}));
    H5mdTrajectory again((dir / "traj.h5").string(), "--traj", H5mdTrajectory::Mode::Append, 5);
    EXPECT_EQ(again.frames(), 0);
}

TEST(OutputFaults, ABackupNeverReplacesOrFollowsAPlantedName) {
    const fs::path dir = freshDir();
    writeText(dir / "md.log", "an earlier run's log\n");
    writeText(dir / "victim", "precious\n");
    fs::create_symlink(dir / "victim", dir / "#md.log.1#");
    const auto backup = backUpExistingFile((dir / "md.log").string(), "--log");
    ASSERT_TRUE(backup.has_value());
    EXPECT_EQ(*backup, (dir / "#md.log.2#").string());
    EXPECT_EQ(contents(dir / "#md.log.2#"), "an earlier run's log\n");
    EXPECT_EQ(contents(dir / "victim"), "precious\n");
    EXPECT_TRUE(fs::is_symlink(dir / "#md.log.1#"));
    EXPECT_FALSE(fs::exists(dir / "md.log"));
}

TEST(OutputFaults, GromacsInputsAreNeverWrittenThroughALinkedDirectory) {
    const fs::path dir = freshDir();
    fs::create_directories(dir / "elsewhere");
    fs::create_directory_symlink(dir / "elsewhere", dir / "gmx");
    ForceField ff;
    const System system = makeLatticeSystem(1000, 11, 300.0, ff);
    const std::string error =
        errorMessageOf([&] { writeGromacsInputs((dir / "gmx").string(), system, gromacsOptions(), ff); });
    EXPECT_NE(error.find("the path is a symbolic link"), std::string::npos) << error;
    EXPECT_EQ(filesIn(dir / "elsewhere"), std::vector<std::string>{});
    // And before the run: the check of the output directory.
    EXPECT_NE(errorMessageOf([&] {
                  requireWritableOutputDirectory("--write-gromacs", (dir / "gmx/").string());
              }).find("the path is a symbolic link"),
              std::string::npos);
}

TEST(OutputFaults, AFullDiskLeavesNoPartOfTheGromacsInputs) {
    const fs::path dir = freshDir();
    ForceField ff;
    const System system = makeLatticeSystem(1000, 11, 300.0, ff);
    // A full disk, simulated by a file-size limit: conf.gro (~45 KB) does not fit.
    rlimit saved{};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
    auto* previousHandler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit small = saved;
    small.rlim_cur = 4096;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    const std::string error =
        errorMessageOf([&] { writeGromacsInputs((dir / "gmx").string(), system, gromacsOptions(), ff); });
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
    std::signal(SIGXFSZ, previousHandler);
    EXPECT_NE(error.find("conf.gro"), std::string::npos) << error;
    EXPECT_EQ(filesIn(dir), std::vector<std::string>{});  // the directory it made is gone again
}
