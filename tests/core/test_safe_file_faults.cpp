// Output files under concurrent and killed writers (label faults): a record
// file another process holds is refused, naming that process, before anything
// in it is cut; a temporary a killed writer left is removed, one a live writer
// holds is not, and nothing is followed through a link.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/detail/core/safe_file.hpp"
#include "test_temp_dir.hpp"

using namespace haloex;
namespace fs = std::filesystem;

namespace {

fs::path freshDir() { return haloex::testing::freshTestDir("haloex_safe_file_faults"); }

// A child process that runs `hold` (which takes a lock and keeps it), tells
// the parent, and waits until the parent lets it go.
class Holder {
public:
    template <class Hold>
    explicit Holder(Hold hold) {
        int ready[2], release[2];
        if (::pipe(ready) != 0 || ::pipe(release) != 0) throw std::runtime_error("pipe");
        pid_ = ::fork();
        if (pid_ == 0) {
            ::close(ready[0]);
            ::close(release[1]);
            hold([&] {
                char c = 1;
                if (::write(ready[1], &c, 1) != 1) std::_Exit(2);
                (void)::read(release[0], &c, 1);  // until the parent closes its end
            });
            std::_Exit(0);
        }
        ::close(ready[1]);
        ::close(release[0]);
        release_ = release[1];
        char c = 0;
        ready_ = ::read(ready[0], &c, 1) == 1;
        ::close(ready[0]);
    }
    Holder(const Holder&) = delete;
    Holder& operator=(const Holder&) = delete;
    ~Holder() {
        ::close(release_);
        int status = 0;
        ::waitpid(pid_, &status, 0);
    }
    pid_t pid() const { return pid_; }
    bool ready() const { return ready_; }

private:
    pid_t pid_ = -1;
    int release_ = -1;
    bool ready_ = false;
};

std::vector<std::string> filesIn(const fs::path& dir) { return haloex::testing::fileNamesIn(dir); }

}  // namespace

TEST(SafeFileFaults, ARecordFileAnotherProcessWritesIsRefusedNamingItAndLeftUntouched) {
    const fs::path dir = freshDir();
    const fs::path path = dir / "traj.gro";
    haloex::testing::writeFileText(path, "the other run's frames\n");
    Holder other([&](auto wait) {
        RecordFile mine(path.string(), "--traj", RecordFile::Mode::Append);
        wait();
    });
    ASSERT_TRUE(other.ready());
    for (const auto mode : {RecordFile::Mode::Truncate, RecordFile::Mode::Append}) {
        try {
            RecordFile second(path.string(), "--traj", mode);
            ADD_FAILURE() << "opened a file another process writes";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
            EXPECT_NE(std::string(e.what()).find(
                          fmt::format("another run (process {}) is writing this file", other.pid())),
                      std::string::npos)
                << e.what();
        }
    }
    EXPECT_EQ(haloex::testing::fileContents(path), "the other run's frames\n");
}

TEST(SafeFileFaults, OnlyTemporariesNoProcessHoldsAreRemoved) {
    const fs::path dir = freshDir();
    const fs::path path = dir / "run.cpt";
    // A killed writer's temporary, a live writer's, a link and a file that only look like temporaries.
    const fs::path stale = dir / "run.cpt.tmp.0123456789abcdef";
    haloex::testing::writeFileText(stale, "HALOEXCP, never renamed");
    haloex::testing::writeFileText(dir / "victim", "precious\n");
    fs::create_symlink(dir / "victim", dir / "run.cpt.tmp.fedcba9876543210");
    haloex::testing::writeFileText(dir / "run.cpt.tmp.notatemporary", "a user's file\n");
    std::string live;
    {
        int names[2];
        ASSERT_EQ(::pipe(names), 0);
        Holder writer([&](auto wait) {
            AtomicFileWriter file(path.string(), "checkpoint");
            file.write("half a checkpoint");
            const std::string name = fs::path(file.temporaryPath()).filename().string();
            if (::write(names[1], name.data(), name.size()) != static_cast<ssize_t>(name.size())) std::_Exit(2);
            wait();
        });
        ASSERT_TRUE(writer.ready());
        char buffer[256] = {};
        ASSERT_GT(::read(names[0], buffer, sizeof buffer - 1), 0);
        live = buffer;
        ::close(names[0]);
        ::close(names[1]);
        EXPECT_EQ(removeStaleTemporaries(path.string()), std::vector<std::string>{stale.string()});
        EXPECT_TRUE(fs::exists(dir / live)) << "removed a temporary a live writer holds";
    }
    EXPECT_FALSE(fs::exists(stale));
    EXPECT_EQ(haloex::testing::fileContents(dir / "victim"), "precious\n");
    EXPECT_TRUE(fs::is_symlink(dir / "run.cpt.tmp.fedcba9876543210"));
    EXPECT_TRUE(fs::exists(dir / "run.cpt.tmp.notatemporary"));
    // The writer's process ended without committing: its temporary is gone too
    // (the destructor removed it), or stale now and removed.
    removeStaleTemporaries(path.string());
    EXPECT_EQ(filesIn(dir),
              (std::vector<std::string>{"run.cpt.tmp.fedcba9876543210", "run.cpt.tmp.notatemporary", "victim"}));
}
