// .gro reading and writing: round trips, trajectories, GROMACS conventions and
// one test per kind of malformed input (message: FILE:LINE: reason (expected)).
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "haloex/core/error.hpp"
#include "haloex/md/gro.hpp"
#include "haloex/md/system.hpp"

using namespace haloex;
using namespace haloex::md;

namespace {

const std::string kDataDir = HALOEX_TEST_DATA_DIR;

std::string tempPath(const std::string& name) { return ::testing::TempDir() + "haloex_md_" + name; }

void expectSameSystem(const System& read, const System& written, bool withVelocities) {
    ASSERT_EQ(read.size(), written.size());
    EXPECT_EQ(read.types, written.types);
    for (int d = 0; d < 3; ++d) EXPECT_NEAR(read.box.length[d], written.box.length[d], 5.000001e-6);
    for (int i = 0; i < written.size(); ++i) {
        for (int d = 0; d < 3; ++d) {
            ASSERT_NEAR(read.positions[i][d], written.positions[i][d], 5.000001e-4) << "atom " << i;
            const double v = withVelocities ? written.velocities[i][d] : 0.0;
            ASSERT_NEAR(read.velocities[i][d], v, 5.000001e-5) << "atom " << i;
        }
        ASSERT_EQ(read.globalIds[i], i);
    }
}

GroFrame parse(const std::string& text, const std::string& name = "test.gro") {
    std::istringstream in(text);
    GroReader reader(in, name);
    auto frame = reader.next();
    if (!frame) throw std::runtime_error("no frame");
    return std::move(*frame);
}

// An atom line as GROMACS writes it.
std::string atomLine(int number, bool positive, double x, double y, double z) {
    return fmt::format("{:5d}{:<5}{:>5}{:5d}{:8.3f}{:8.3f}{:8.3f}\n", number, positive ? "POS" : "NEG",
                       positive ? "P" : "N", number, x, y, z);
}

const std::string kTwoAtoms = "t\n2\n" + atomLine(1, true, 0.1, 0.2, 0.3) + atomLine(2, false, 1.0, 1.1, 1.2);

// Parses text named "bad.gro" and checks the error names the file, the line and the reason.
void expectMalformed(const std::string& text, int line, const std::string& reason) {
    try {
        parse(text, "bad.gro");
        ADD_FAILURE() << "accepted malformed input (expected: " << reason << ")\n" << text;
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput) << msg;
        EXPECT_EQ(msg.rfind(fmt::format("bad.gro:{}: ", line), 0), 0u) << msg;
        EXPECT_NE(msg.find(reason), std::string::npos) << msg;
        EXPECT_NE(msg.find("(expected "), std::string::npos) << msg;
    }
}

}  // namespace

TEST(Gro, RoundTripWithAndWithoutVelocities) {
    const ForceField ff;
    const System s = makeLatticeSystem(1000, 3, 300.0, ff);
    for (bool withVelocities : {true, false}) {
        std::stringstream buffer;
        writeGro(buffer, s, "lattice start", withVelocities);
        GroReader reader(buffer, "memory");
        const auto frame = reader.next();
        ASSERT_TRUE(frame.has_value());
        EXPECT_EQ(frame->title, "lattice start");
        EXPECT_EQ(frame->hasVelocities, withVelocities);
        expectSameSystem(frame->system, s, withVelocities);
        EXPECT_FALSE(reader.next().has_value());
    }
}

TEST(Gro, FileRoundTripAndFixture) {
    const ForceField ff;
    const System s = makeLatticeSystem(2000, 8, 300.0, ff);
    const std::string path = tempPath("roundtrip.gro");
    writeGro(path, s, "title\nwith a newline", true);
    const GroFrame frame = readGro(path);
    EXPECT_EQ(frame.title, "title with a newline");
    expectSameSystem(frame.system, s, true);

    const GroFrame ref = readGro(kDataDir + "/ref-3000.gro");
    EXPECT_EQ(ref.system.size(), 3000);
    EXPECT_FALSE(ref.hasVelocities);
    EXPECT_EQ(std::count(ref.system.types.begin(), ref.system.types.begin() + 1500, 0), 1500);
    EXPECT_EQ(std::count(ref.system.types.begin() + 1500, ref.system.types.end(), 1), 1500);
    EXPECT_DOUBLE_EQ(ref.system.box.length.x, 3.10723);
    EXPECT_DOUBLE_EQ(ref.system.positions[0].x, 2.230);
    EXPECT_DOUBLE_EQ(ref.system.positions[2999].z, 1.966);
}

TEST(Gro, TrajectoryFramesAppend) {
    const ForceField ff;
    System s = makeLatticeSystem(1000, 4, 300.0, ff);
    const std::string path = tempPath("traj.gro");
    std::vector<System> written;
    {
        GroTrajectoryWriter writer(path);
        for (int step = 0; step < 3; ++step) {
            for (auto& p : s.positions) p.x += 0.01;
            writer.writeFrame(s, fmt::format("frame t= {}", step), step % 2 == 0);
            written.push_back(s);
        }
        EXPECT_EQ(writer.framesWritten(), 3);
    }
    {
        GroTrajectoryWriter more(path, GroTrajectoryWriter::Mode::Append);
        more.writeFrame(s, "appended", true);
        written.push_back(s);
    }
    const auto frames = readGroTrajectory(path);
    ASSERT_EQ(frames.size(), 4u);
    for (std::size_t f = 0; f < frames.size(); ++f) {
        SCOPED_TRACE("frame " + std::to_string(f));
        const bool withVelocities = f != 1;
        EXPECT_EQ(frames[f].hasVelocities, withVelocities);
        expectSameSystem(frames[f].system, written[f], withVelocities);
    }
    EXPECT_EQ(frames[3].title, "appended");

    GroTrajectoryWriter fresh(path);  // truncates
    fresh.writeFrame(s, "only", false);
    EXPECT_EQ(readGroTrajectory(path).size(), 1u);
}

TEST(Gro, NumbersWrapAt100000LikeGromacs) {
    System s;
    const int n = 100002;
    s.box.length = {10.0, 10.0, 10.0};
    for (int i = 0; i < n; ++i) {
        s.positions.push_back({0.001 * (i % 9000), 1.0, 2.0});
        s.velocities.push_back({});
        s.types.push_back(i % 2);
        s.globalIds.push_back(i);
    }
    std::stringstream buffer;
    writeGro(buffer, s, "big", false);
    std::string line;
    for (int i = 0; i < 2 + 100000; ++i) std::getline(buffer, line);
    EXPECT_EQ(line.substr(0, 20), "    0NEG      N    0");  // atom 100000
    std::getline(buffer, line);
    EXPECT_EQ(line.substr(0, 20), "    1POS      P    1");  // atom 100001
    buffer.seekg(0);
    GroReader reader(buffer, "big");
    const auto frame = reader.next();
    ASSERT_TRUE(frame.has_value());
    EXPECT_EQ(frame->system.size(), n);
    EXPECT_EQ(frame->system.types, s.types);
}

TEST(Gro, ReadsOtherPrecisionsOutsideAtomsAndWindowsLineEnds) {
    // %10.5f positions and %10.6f velocities, as GROMACS writes with higher precision.
    const std::string text = "precise\r\n 2\r\n" +
                             fmt::format("{:5d}{:<5}{:>5}{:5d}{:10.5f}{:10.5f}{:10.5f}{:10.6f}{:10.6f}{:10.6f}\r\n", 1,
                                         "POS", "P", 1, -0.12345, 1.5, 7.25, 0.5, -0.25, 0.125) +
                             fmt::format("{:5d}{:<5}{:>5}{:5d}{:10.5f}{:10.5f}{:10.5f}{:10.6f}{:10.6f}{:10.6f}\r\n", 2,
                                         "NEG", "N", 2, 3.0, 2.0, 1.0, 0.0, 0.0, 1.0) +
                             "   3.00000   3.00000   3.00000\r\n";
    const GroFrame f = parse(text);
    EXPECT_EQ(f.title, "precise");
    EXPECT_TRUE(f.hasVelocities);
    EXPECT_DOUBLE_EQ(f.system.positions[0].x, -0.12345);  // outside the box: kept, wrapping comes later
    EXPECT_DOUBLE_EQ(f.system.positions[0].z, 7.25);
    EXPECT_DOUBLE_EQ(f.system.velocities[0].y, -0.25);
    EXPECT_EQ(f.system.types, (std::vector<int>{0, 1}));

    // A 9-value box line with zero off-diagonals is orthorhombic.
    const GroFrame nine = parse(kTwoAtoms + "   2.00000   3.00000   4.00000   0.0 0.0 0.0 0.0 0.0 0.0\n");
    EXPECT_EQ(nine.system.box.length, (Vec3d{2.0, 3.0, 4.0}));
}

TEST(Gro, MalformedInputNamesFileLineAndReason) {
    const std::string atom3 = atomLine(3, true, 0.5, 0.5, 0.5);
    const std::string box = "   3.00000   3.00000   3.00000\n";
    expectMalformed("only a title\n", 2, "end of file after the title");
    expectMalformed("t\nabc\n", 2, "'abc' is not an atom count");
    expectMalformed("t\n0\n" + box, 2, "out of range");
    expectMalformed("t\n-4\n" + box, 2, "out of range");
    expectMalformed("t\n3\n" + atomLine(1, true, 1, 1, 1) + atomLine(2, false, 1, 1, 2), 5, "atom 3 of 3 is missing");
    expectMalformed("t\n3\n" + atomLine(1, true, 1, 1, 1) + atomLine(2, false, 1, 1, 2) + box, 5,
                    "found the box line where atom 3 of 3 belongs");
    expectMalformed("t\n1\n" + box, 3, "found the box line where atom 1 of 1 belongs");
    expectMalformed(kTwoAtoms.substr(0, 2) + "3" + kTwoAtoms.substr(3) + "   3.0 3.0 3.0 0.0 0.0 0.0 0.0 0.0 0.0\n", 5,
                    "found the box line where atom 3 of 3 belongs");
    expectMalformed(kTwoAtoms + atom3 + box, 5, "another atom line where the box line belongs");
    expectMalformed(kTwoAtoms, 5, "box line is missing");
    expectMalformed("t\n2\n" + atomLine(1, true, 1, 1, 1) + "    2NEG      N    2   1.000   2.0\n" + box, 4,
                    "too short");
    expectMalformed("t\n2\n" + atomLine(1, true, 1, 1, 1) + "    2NEG      N    2   1.000     abc   3.000\n" + box, 4,
                    "coordinate y of atom 2 of 2 is 'abc', not a number");
    expectMalformed("t\n2\n" + atomLine(1, true, 1, 1, 1) + "    2NEG      N    2   1.000     nan   3.000\n" + box, 4,
                    "coordinate y of atom 2 of 2 is not finite");
    expectMalformed("t\n2\n" + atomLine(1, true, 1, 1, 1) + "    2SOL     OW    2   1.000   2.000   3.000\n" + box, 4,
                    "residue 'SOL' and atom 'OW'");
    expectMalformed("t\n2\n" + atomLine(1, true, 1, 1, 1) + "    2POS      N    2   1.000   2.000   3.000\n" + box, 4,
                    "residue 'POS' and atom 'N'");
    expectMalformed("t\n1\n    1POS      P    1       1       2       3\n" + box, 3,
                    "cannot find the coordinate fields");
    expectMalformed("t\n2\n    1POS      P    1   1.000   2.000   3.000  0.1000  0.2000  0.3000\n" +
                        atomLine(2, false, 1, 1, 1) + box,
                    4, "velocities of atom 2 of 2 are incomplete");
    expectMalformed("t\n2\n    1POS      P    1   1.000   2.000   3.000  0.1000\n" + atomLine(2, false, 1, 1, 1) + box,
                    3, "velocities of atom 1 of 2 are incomplete");
    expectMalformed(kTwoAtoms + "   3.00000   3.00000\n", 5, "bad box line");
    expectMalformed(kTwoAtoms + "   3.00000   x   3.00000\n", 5, "bad box line");
    expectMalformed(kTwoAtoms + "   3.0 3.0 3.0 0.0 0.0 0.5 0.0 0.0 0.0\n", 5, "triclinic box");
    expectMalformed(kTwoAtoms + "   3.0 -3.0 3.0\n", 5, "box length y is -3");
    expectMalformed(kTwoAtoms + "   3.0 inf 3.0\n", 5, "box value 2 is not finite");
    expectMalformed("\n\n\nt\n", 2, "blank line where the number of atoms belongs");
}

TEST(Gro, EmptyFilesAndMissingFilesAreRefused) {
    const std::string empty = tempPath("empty.gro");
    std::ofstream(empty).close();
    try {
        readGro(empty);
        FAIL() << "empty file accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(empty + ":1: the file holds no frame"), std::string::npos) << e.what();
    }
    try {
        readGro(tempPath("does-not-exist.gro"));
        FAIL() << "missing file accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Io);
        EXPECT_NE(std::string(e.what()).find("does-not-exist.gro"), std::string::npos);
    }
}

TEST(Gro, WriterRefusesWhatDoesNotFitTheColumns) {
    const ForceField ff;
    System s = makeLatticeSystem(1000, 1, 300.0, ff);
    s.positions[10].y = 12345.0;
    std::stringstream out;
    try {
        writeGro(out, s, "t", false);
        FAIL() << "a coordinate of 12345 nm does not fit %8.3f";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("coordinate y of atom 10"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(out.str().empty());  // nothing half-written
}

TEST(Gro, LinesAreReadWithABound) {
    // A file without line ends (--gro /dev/zero) used to grow one line to the
    // memory limit; now the first line longer than the bound is refused.
    expectMalformed(std::string(kMaxGroLineLength + 1, '\0'), 1, "the line is longer than 4096 characters");
    expectMalformed("t\n2\n" + std::string(100000, 'x'), 3, "the line is longer than 4096 characters");
    const GroFrame longTitle =
        parse(std::string(kMaxGroLineLength, 't') + kTwoAtoms.substr(1) + "   3.00000   3.00000   3.00000\n");
    EXPECT_EQ(longTitle.title.size(), kMaxGroLineLength);
    try {
        readGro("/dev/zero");
        FAIL() << "/dev/zero accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("/dev/zero:1: the line is longer than"), std::string::npos) << e.what();
    }
}

TEST(Gro, ControlCharactersOfTheFileAreEscapedInMessages) {
    // A terminal escape sequence as a residue name, a carriage return in a count.
    expectMalformed("t\n2\n" + atomLine(1, true, 1, 1, 1) + "    2\x1b[2J     N    2   1.000   2.000   3.000\n", 4,
                    "residue '\\x1b[2J' and atom 'N'");
    expectMalformed("t\n1\r"
                    "2\n",
                    2, "'1\\x0d2' is not an atom count");
    try {
        parse("t\n2\n" + atomLine(1, true, 1, 1, 1) + "    2\x1b[2J     N    2   1.000   2.000   3.000\n");
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()).find('\x1b'), std::string::npos) << e.what();
    }
}

TEST(Gro, AFailedFrameIsTruncatedBackSoTheTrajectoryHoldsWholeFrames) {
    const ForceField ff;
    const System s = makeLatticeSystem(1000, 4, 300.0, ff);
    const std::string path = tempPath("torn.gro");
    GroTrajectoryWriter writer(path);
    writer.writeFrame(s, "first", false);
    const auto whole = std::filesystem::file_size(path);

    // A full disk, simulated by a file-size limit that the second frame crosses.
    rlimit saved{};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
    auto* previousHandler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit small = saved;
    small.rlim_cur = whole + whole / 2;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    std::string message;
    try {
        writer.writeFrame(s, "second", false);
    } catch (const Error& e) {
        message = e.what();
    }
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
    std::signal(SIGXFSZ, previousHandler);

    EXPECT_NE(message.find("trajectory " + path + ": cannot append"), std::string::npos) << message;
    EXPECT_EQ(std::filesystem::file_size(path), whole);
    EXPECT_EQ(readGroTrajectory(path).size(), 1u);
    EXPECT_EQ(writer.framesWritten(), 1);
}

TEST(Gro, TrajectoriesAndFilesAreOnlyWrittenToRegularFiles) {
    const std::string fifo = tempPath("fifo.gro");
    std::filesystem::remove(fifo);
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
    // Opening a FIFO for writing used to wait for a reader (forever).
    try {
        GroTrajectoryWriter writer(fifo);
        FAIL() << "opened a FIFO";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("the path is a FIFO"), std::string::npos) << e.what();
    }
    const ForceField ff;
    try {
        writeGro(fifo, makeLatticeSystem(1000, 4, 300.0, ff), "t", false);
        FAIL() << "wrote into a FIFO";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("the path is a FIFO"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(std::filesystem::is_fifo(fifo));
    std::filesystem::remove(fifo);
}