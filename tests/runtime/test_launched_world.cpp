// The launched world (haloex/runtime/launched_world.hpp): which environment
// counts as "started by an MPI launcher", nothing started without one, and
// a build without MPI refusing a launched process instead of running it
// alone.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "haloex/config.hpp"
#include "haloex/core/error.hpp"
#include "haloex/runtime/launched_world.hpp"

namespace {

using haloex::runtime::launchedByMpiLauncher;
using haloex::runtime::startLaunchedWorld;

const std::vector<std::string> kLauncherVariables{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE",           "PMI_RANK", "PMIX_RANK",
                                                  "SLURM_PROCID",         "MV2_COMM_WORLD_SIZE"};

// Clears the launcher variables for the test's lifetime, then puts them back.
class NoLauncher {
public:
    NoLauncher() {
        for (const std::string& name : kLauncherVariables) {
            const char* value = std::getenv(name.c_str());
            saved_.push_back(value ? std::optional<std::string>(value) : std::nullopt);
            unsetenv(name.c_str());
        }
    }
    ~NoLauncher() {
        for (std::size_t k = 0; k < kLauncherVariables.size(); ++k) {
            if (saved_[k]) setenv(kLauncherVariables[k].c_str(), saved_[k]->c_str(), 1);
            else unsetenv(kLauncherVariables[k].c_str());
        }
    }
    NoLauncher(const NoLauncher&) = delete;
    NoLauncher& operator=(const NoLauncher&) = delete;

private:
    std::vector<std::optional<std::string>> saved_;
};

TEST(LaunchedWorld, EachLaunchersVariableCounts) {
    const NoLauncher clean;
    EXPECT_FALSE(launchedByMpiLauncher());
    for (const std::string& name : kLauncherVariables) {
        setenv(name.c_str(), "2", 1);
        EXPECT_TRUE(launchedByMpiLauncher()) << name;
        unsetenv(name.c_str());
    }
}

TEST(LaunchedWorld, NothingStartsWithoutALauncher) {
    const NoLauncher clean;
    EXPECT_EQ(startLaunchedWorld(), nullptr);
}

TEST(LaunchedWorld, ABuildWithoutMpiRefusesALaunchedProcess) {
    if (HALOEX_HAVE_MPI) GTEST_SKIP() << "this build has MPI: a launched process gets an MPI world (tests/runtime/mpi)";
    const NoLauncher clean;
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    try {
        (void)startLaunchedWorld();
        ADD_FAILURE() << "a launched process started without MPI";
    } catch (const haloex::Error& e) {
        EXPECT_EQ(e.kind(), haloex::ErrorKind::InvalidInput);
        EXPECT_NE(std::string(e.what()).find("built without MPI"), std::string::npos) << e.what();
    }
}

}  // namespace
