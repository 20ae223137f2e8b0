// The one output layer of continuing outputs (md::OutputFiles): a restart
// continues each file exactly where its checkpoint recorded it -- what was
// written after the checkpoint is cut back, a changed or foreign file is
// refused, a new file is started -- so no record is written twice or lost.
#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <string>

#include "haloex/core/error.hpp"
#include "haloex/md/output_files.hpp"
#include "test_refusal.hpp"
#include "test_temp_dir.hpp"

using namespace haloex;
using namespace haloex::md;
namespace fs = std::filesystem;

namespace {

fs::path freshDir() { return haloex::testing::freshTestDir("haloex_outputs"); }

std::string contents(const fs::path& path) { return haloex::testing::fileContents(path); }
void writeText(const fs::path& path, const std::string& text) { haloex::testing::writeFileText(path, text); }

std::string record(std::int64_t step) { return fmt::format("frame at step {}\n", step); }

// A run from `from` that writes a record every 10 steps up to `to` and
// returns the positions a checkpoint at `to` would record.
std::vector<OutputPosition> writeRun(const fs::path& path, OutputFiles::Start start, std::int64_t from,
                                     std::int64_t to) {
    OutputFiles files(std::move(start));
    files.open("--traj", path.string(), nullptr, -1);
    for (std::int64_t s = from; s <= to; s += 10) files.append("--traj", record(s), s);
    return files.positions();
}

OutputFiles::Start restartAt(std::int64_t step, std::vector<OutputPosition> recorded) {
    OutputFiles::Start start;
    start.checkpointPath = "state.cpt";
    start.step = step;
    start.recorded = std::move(recorded);
    return start;
}

std::string refusal(const fs::path& path, const OutputFiles::Start& start) {
    return haloex::testing::invalidInputMessage([&] {
        OutputFiles files(start);
        files.open("--traj", path.string(), nullptr, -1);
    });
}

}  // namespace

TEST(OutputFiles, PositionsRecordLengthRecordsLastStepAndTail) {
    const fs::path traj = freshDir() / "traj.gro";
    writeText(traj, "an older run's frames\n");
    const std::vector<OutputPosition> at30 = writeRun(traj, {}, 0, 30);  // a fresh run starts the file
    ASSERT_EQ(at30.size(), 1u);
    EXPECT_EQ(at30[0].role, "--traj");
    EXPECT_EQ(at30[0].path, fs::absolute(traj).lexically_normal().string());
    EXPECT_EQ(at30[0].bytes, contents(traj).size());
    EXPECT_EQ(at30[0].records, 4);
    EXPECT_EQ(at30[0].lastStep, 30);
    EXPECT_EQ(at30[0].tailBytes, at30[0].bytes);
    EXPECT_EQ(contents(traj), record(0) + record(10) + record(20) + record(30));
}

// Defect 3: a restart after a kill appended to the whole file, so the frames
// written after the checkpoint came twice and out of order.
TEST(OutputFiles, ARestartCutsBackWhatWasWrittenAfterTheCheckpoint) {
    const fs::path traj = freshDir() / "traj.gro";
    const std::vector<OutputPosition> at20 = writeRun(traj, {}, 0, 20);
    {
        // The run went on to step 50 before it was killed; its last checkpoint was at 20.
        OutputFiles more(restartAt(20, at20));
        more.open("--traj", traj.string(), nullptr, -1);
        for (std::int64_t s = 30; s <= 50; s += 10) more.append("--traj", record(s), s);
    }
    OutputFiles files(restartAt(20, at20));
    files.open("--traj", traj.string(), nullptr, -1);
    ASSERT_EQ(files.notes().size(), 1u);
    EXPECT_NE(files.notes()[0].find("cut back"), std::string::npos) << files.notes()[0];
    EXPECT_EQ(files.records("--traj"), 3);
    for (std::int64_t s = 30; s <= 40; s += 10) files.append("--traj", record(s), s);
    EXPECT_EQ(contents(traj), record(0) + record(10) + record(20) + record(30) + record(40));
    const std::vector<OutputPosition> at40 = files.positions();
    EXPECT_EQ(at40[0].records, 5);
    EXPECT_EQ(at40[0].lastStep, 40);
}

TEST(OutputFiles, AFileMovedWithItsDirectoryIsKnownByItsContents) {
    const fs::path dir = freshDir();
    const std::vector<OutputPosition> at20 = writeRun(dir / "traj.gro", {}, 0, 20);
    fs::rename(dir / "traj.gro", dir / "moved.gro");
    OutputFiles files(restartAt(20, at20));
    files.open("--traj", (dir / "moved.gro").string(), nullptr, -1);
    files.append("--traj", record(30), 30);
    EXPECT_EQ(contents(dir / "moved.gro"), record(0) + record(10) + record(20) + record(30));
}

TEST(OutputFiles, ANewOrEmptyFileStartsAtTheCheckpoint) {
    const fs::path dir = freshDir();
    const std::vector<OutputPosition> at20 = writeRun(dir / "traj.gro", {}, 0, 20);
    for (const bool existsEmpty : {false, true}) {
        SCOPED_TRACE(existsEmpty ? "empty file" : "new file");
        const fs::path next = dir / (existsEmpty ? "empty.gro" : "new.gro");
        if (existsEmpty) writeText(next, "");
        OutputFiles files(restartAt(20, at20));
        files.open("--traj", next.string(), nullptr, -1);
        files.append("--traj", record(30), 30);
        EXPECT_EQ(contents(next), record(30));
        EXPECT_EQ(files.records("--traj"), 1);
    }
    // A checkpoint of a run without the output: a new file is fine too.
    OutputFiles files(restartAt(20, {}));
    files.open("--traj", (dir / "other.gro").string(), nullptr, -1);
    EXPECT_TRUE(fs::exists(dir / "other.gro"));
}

TEST(OutputFiles, AShorterEditedOrForeignFileIsRefusedAndLeftAlone) {
    const fs::path dir = freshDir();
    const fs::path traj = dir / "traj.gro";
    const std::vector<OutputPosition> at20 = writeRun(traj, {}, 0, 20);
    const std::string full = contents(traj);

    writeText(traj, record(0) + record(10));  // cut
    std::string msg = refusal(traj, restartAt(20, at20));
    EXPECT_NE(msg.find(fmt::format("the file has {} bytes, but checkpoint state.cpt recorded it with {} bytes, 3 "
                                   "record(s), the last at step 20",
                                   (record(0) + record(10)).size(), full.size())),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("give --traj a new file name to start a new one at step 20"), std::string::npos) << msg;
    EXPECT_EQ(contents(traj), record(0) + record(10));

    std::string edited = full;
    edited[5] = 'X';
    writeText(traj, edited + record(30));
    msg = refusal(traj, restartAt(20, at20));
    EXPECT_NE(msg.find("differ from those checkpoint state.cpt recorded"), std::string::npos) << msg;
    EXPECT_EQ(contents(traj), edited + record(30));

    fs::remove(traj);
    msg = refusal(traj, restartAt(20, at20));
    EXPECT_NE(msg.find("the file has 0 bytes"), std::string::npos) << msg;
    EXPECT_FALSE(fs::exists(traj));

    writeText(dir / "other.gro", "someone else's file\n");
    msg = refusal(dir / "other.gro", restartAt(20, at20));
    EXPECT_NE(msg.find("is not the file checkpoint state.cpt continues"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Give --traj " + at20[0].path + " to continue it"), std::string::npos) << msg;
    msg = refusal(dir / "other.gro", restartAt(20, {}));
    EXPECT_NE(msg.find("checkpoint state.cpt records no --traj output"), std::string::npos) << msg;
    EXPECT_EQ(contents(dir / "other.gro"), "someone else's file\n");
}

// Format-1 checkpoints recorded no positions: appending is safe only when
// the file ends with the record due at the checkpoint's step.
TEST(OutputFiles, AFormatOneCheckpointContinuesOnlyAFileEndingAtItsStep) {
    const fs::path traj = freshDir() / "traj.gro";
    writeRun(traj, {}, 0, 30);
    OutputFiles::Start legacy = restartAt(20, {});
    legacy.outputsRecorded = false;
    const auto lastStep = [](std::int64_t step) {
        return [step](const std::string&) { return std::optional<std::int64_t>(step); };
    };
    try {
        OutputFiles files(legacy);
        files.open("--traj", traj.string(), lastStep(30), 20);
        ADD_FAILURE() << "appended after a frame past the checkpoint";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("has format 1"), std::string::npos) << msg;
        EXPECT_NE(msg.find("last record is at step 30 rather than at step 20"), std::string::npos) << msg;
    }
    OutputFiles files(legacy);
    files.open("--traj", traj.string(), lastStep(20), 20);
    files.append("--traj", record(30), 30);
    EXPECT_EQ(files.positions()[0].lastStep, 30);
}
