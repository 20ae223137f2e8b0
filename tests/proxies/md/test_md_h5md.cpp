// H5MD trajectories (md::H5mdTrajectory) and their continuation across
// restarts through the one output layer (md::OutputFiles::openH5md): the
// frames a checkpoint recorded are kept, what came after is cut back, and a
// changed or foreign file is refused. Skipped, saying why, in a build
// without HDF5 (where the refusal itself is tested instead).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/md/h5md_trajectory.hpp"
#include "haloex/md/output_files.hpp"
#include "test_refusal.hpp"
#include "test_temp_dir.hpp"

using namespace haloex;
using namespace haloex::md;
namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kAtoms = 5;
constexpr std::array<double, 3> kBox{2.0, 3.0, 4.0};

#define REQUIRE_H5MD()                                                                           \
    do {                                                                                         \
        if (!h5mdAvailable()) GTEST_SKIP() << "built without HDF5: " << h5mdUnavailableReason(); \
    } while (0)

fs::path freshDir() { return haloex::testing::freshTestDir("haloex_h5md"); }

// Distinct positions for every step (and `salt`: another run's).
std::vector<Vec3d> positionsAt(std::int64_t step, double salt = 0.0) {
    std::vector<Vec3d> p;
    for (std::int64_t i = 0; i < kAtoms; ++i) {
        p.push_back({0.1 * i + 0.001 * step + salt, 0.2 * i + salt, 0.3 * i - 0.001 * step});
    }
    return p;
}

void appendFrames(OutputFiles& files, std::int64_t from, std::int64_t to, double salt = 0.0) {
    for (std::int64_t s = from; s <= to; s += 10) files.appendFrame("--traj", s, 0.002 * s, kBox, positionsAt(s, salt));
}

// A fresh run writing a frame every 10 steps up to `to`; what a checkpoint at `to` records.
std::vector<OutputPosition> writeRun(const fs::path& path, std::int64_t to, double salt = 0.0) {
    OutputFiles files({});
    files.openH5md("--traj", path.string(), kAtoms, -1, 10);
    appendFrames(files, 0, to, salt);
    return files.positions();
}

OutputFiles::Start restartAt(std::int64_t step, std::vector<OutputPosition> recorded) {
    OutputFiles::Start start;
    start.checkpointPath = "state.cpt";
    start.step = step;
    start.recorded = std::move(recorded);
    return start;
}

std::vector<std::int64_t> steps(const fs::path& path) {
    const H5mdTrajectory traj(path.string(), "--traj", H5mdTrajectory::Mode::Append, kAtoms);
    std::vector<std::int64_t> out;
    for (std::int64_t f = 0; f < traj.frames(); ++f) out.push_back(traj.stepOf(f));
    return out;
}

std::string refusal(const fs::path& path, const OutputFiles::Start& start) {
    return haloex::testing::invalidInputMessage([&] {
        OutputFiles files(start);
        files.openH5md("--traj", path.string(), kAtoms, -1, 10);
    });
}

}  // namespace

TEST(H5mdTrajectory, WithoutHdf5TheWriterSaysWhy) {
    if (h5mdAvailable()) GTEST_SKIP() << "built with HDF5: the writer works (the other tests)";
    try {
        H5mdTrajectory traj((freshDir() / "t.h5").string(), "--traj", H5mdTrajectory::Mode::Create, kAtoms);
        ADD_FAILURE() << "no refusal";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
        EXPECT_NE(std::string(e.what()).find("libhdf5-dev"), std::string::npos) << e.what();
    }
}

TEST(H5mdTrajectory, FramesReadBackWithTheirStepsAndChecksum) {
    REQUIRE_H5MD();
    const fs::path path = freshDir() / "traj.h5";
    std::uint64_t checksum = 0;
    {
        H5mdTrajectory traj(path.string(), "--traj", H5mdTrajectory::Mode::Create, kAtoms);
        EXPECT_EQ(traj.frames(), 0);
        for (std::int64_t s = 0; s <= 20; s += 10) traj.append(s, 0.002 * s, kBox, positionsAt(s));
        EXPECT_EQ(traj.frames(), 3);
        EXPECT_EQ(traj.positionBytes(), 3u * kAtoms * 3 * sizeof(float));
        checksum = traj.positionTailChecksum(traj.positionBytes(), traj.positionBytes());
    }
    H5mdTrajectory again(path.string(), "--traj", H5mdTrajectory::Mode::Append, kAtoms);
    EXPECT_EQ(again.frames(), 3);
    EXPECT_EQ(again.stepOf(2), 20);
    EXPECT_EQ(again.positionTailChecksum(again.positionBytes(), again.positionBytes()), checksum);
    // Another frame's positions change the checksum of the tail that holds them.
    const std::uint64_t firstFrame = again.positionTailChecksum(kAtoms * 3 * sizeof(float), 12);
    EXPECT_NE(firstFrame, again.positionTailChecksum(2 * kAtoms * 3 * sizeof(float), 12));
}

TEST(H5mdTrajectory, AnotherAtomCountOrAFileThatIsNotHdf5IsRefused) {
    REQUIRE_H5MD();
    const fs::path dir = freshDir();
    { H5mdTrajectory traj((dir / "five.h5").string(), "--traj", H5mdTrajectory::Mode::Create, kAtoms); }
    try {
        H5mdTrajectory traj((dir / "five.h5").string(), "--traj", H5mdTrajectory::Mode::Append, 7);
        ADD_FAILURE() << "another atom count continued";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
        EXPECT_NE(std::string(e.what()).find("7 atoms"), std::string::npos) << e.what();
    }
    haloex::testing::writeFileText(dir / "text.h5", "not HDF5\n");
    try {
        H5mdTrajectory traj((dir / "text.h5").string(), "--traj", H5mdTrajectory::Mode::Append, kAtoms);
        ADD_FAILURE() << "a text file continued";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
        EXPECT_NE(std::string(e.what()).find("not an HDF5 file"), std::string::npos) << e.what();
    }
}

TEST(H5mdOutput, PositionsRecordFramesLastStepSpacingAndTail) {
    REQUIRE_H5MD();
    const std::vector<OutputPosition> at30 = writeRun(freshDir() / "traj.h5", 30);
    ASSERT_EQ(at30.size(), 1u);
    EXPECT_EQ(at30[0].records, 4);
    EXPECT_EQ(at30[0].lastStep, 30);
    EXPECT_EQ(at30[0].every, 10);
    EXPECT_EQ(at30[0].bytes, 4u * kAtoms * 3 * sizeof(float));
    EXPECT_EQ(at30[0].tailBytes, at30[0].bytes);
}

TEST(H5mdOutput, ARestartCutsBackTheFramesWrittenAfterTheCheckpoint) {
    REQUIRE_H5MD();
    const fs::path traj = freshDir() / "traj.h5";
    const std::vector<OutputPosition> at20 = writeRun(traj, 20);
    {
        // The run went on to step 50 before it was killed; its last checkpoint was at 20.
        OutputFiles more(restartAt(20, at20));
        more.openH5md("--traj", traj.string(), kAtoms, -1, 10);
        appendFrames(more, 30, 50);
    }
    EXPECT_EQ(steps(traj), (std::vector<std::int64_t>{0, 10, 20, 30, 40, 50}));
    OutputFiles files(restartAt(20, at20));
    files.openH5md("--traj", traj.string(), kAtoms, -1, 10);
    ASSERT_EQ(files.notes().size(), 1u);
    EXPECT_NE(files.notes()[0].find("cut back from 6 to 3 frames"), std::string::npos) << files.notes()[0];
    EXPECT_EQ(files.records("--traj"), 3);
    appendFrames(files, 30, 40);
    EXPECT_EQ(files.positions()[0].records, 5);
    EXPECT_EQ(steps(traj), (std::vector<std::int64_t>{0, 10, 20, 30, 40}));
}

TEST(H5mdOutput, AChangedFileIsRefused) {
    REQUIRE_H5MD();
    const fs::path dir = freshDir();
    const fs::path traj = dir / "traj.h5";
    const std::vector<OutputPosition> at20 = writeRun(traj, 20);
    // Replaced by another run's file with the same steps but other positions.
    writeRun(traj, 20, 0.5);
    std::string msg = refusal(traj, restartAt(20, at20));
    EXPECT_NE(msg.find("cut, edited or replaced after the checkpoint"), std::string::npos) << msg;
    // Cut to fewer frames than the checkpoint recorded.
    writeRun(traj, 10);
    msg = refusal(traj, restartAt(20, at20));
    EXPECT_NE(msg.find("holds 2 frame(s), the last at step 10"), std::string::npos) << msg;
    // Removed: continuing would leave a gap.
    fs::remove(traj);
    msg = refusal(traj, restartAt(20, at20));
    EXPECT_NE(msg.find("the file is missing"), std::string::npos) << msg;
}

TEST(H5mdOutput, AForeignFileIsRefusedAndANewOneStartsAtTheCheckpoint) {
    REQUIRE_H5MD();
    const fs::path dir = freshDir();
    const std::vector<OutputPosition> at20 = writeRun(dir / "traj.h5", 20);
    writeRun(dir / "other.h5", 20, 0.5);
    std::string msg = refusal(dir / "other.h5", restartAt(20, at20));
    EXPECT_NE(msg.find("is not the trajectory checkpoint state.cpt continues"), std::string::npos) << msg;
    msg = refusal(dir / "other.h5", restartAt(20, {}));
    EXPECT_NE(msg.find("records no --traj output"), std::string::npos) << msg;
    OutputFiles files(restartAt(20, at20));
    files.openH5md("--traj", (dir / "new.h5").string(), kAtoms, -1, 10);
    appendFrames(files, 30, 30);
    EXPECT_EQ(steps(dir / "new.h5"), (std::vector<std::int64_t>{30}));
}
