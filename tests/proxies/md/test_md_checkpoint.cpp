// Binary checkpoints: bitwise round trips, atomic replacement, and one test per
// kind of damaged or foreign file (the error names the file and the problem).
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "haloex/core/error.hpp"
#include "haloex/md/checkpoint.hpp"
#include "haloex/md/random.hpp"
#include "haloex/md/system.hpp"
#include "test_temp_dir.hpp"

using namespace haloex;
using namespace haloex::md;
namespace fs = std::filesystem;

namespace {

// Format 2 without outputs: the 176-byte header, then an output section of 8
// bytes (no outputs), then the atoms.
constexpr std::size_t kHeaderBytes = 176;
// The output section without outputs: its count, padding and (format 3) the energy-step spacing.
constexpr std::size_t kAtomsStart = kHeaderBytes + 16;
constexpr std::size_t kAtomCountOffset = 160;
constexpr std::size_t kAtomBytes = 64;

fs::path freshDir() { return haloex::testing::freshTestDir("haloex_cpt"); }

CheckpointData sampleData() {
    ForceField ff;
    CheckpointData d;
    d.system = makeLatticeSystem(1000, 7, 300.0, ff);
    // Ids with gaps, as after a user's .gro subset: they need not be 0..N-1.
    for (int i = 0; i < d.system.size(); ++i) d.system.globalIds[i] = 3 * i + 1;
    d.step = 1250;
    d.dt = 0.002;
    d.time = 2.5;
    d.rc = 0.9;
    d.rlist = 1.0123456789;
    d.nstlist = 50;
    d.seed = 0xfeedfacecafebeefULL;
    d.temperature = 310.5;
    d.thermostat = "v-rescale";
    d.tauT = 0.25;
    d.thermostatEnergy = -123.456789012345;
    d.pendingVelocityScale = 0.99871234;
    PortableRandom random(99);
    random.uniform();
    random.normal();  // leaves a spare normal
    d.thermostatRandom = random.state();
    return d;
}

std::vector<char> fileBytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void writeBytes(const fs::path& path, const std::vector<char>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Overwrites sizeof(T) bytes at `offset`.
template <class T>
void patch(std::vector<char>& bytes, std::size_t offset, const T& value) {
    if (bytes.empty() || offset + sizeof(T) > bytes.size()) throw std::out_of_range("patch past the end");
    std::memcpy(&bytes[offset], &value, sizeof(T));
}

template <class T>
T peek(const std::vector<char>& bytes, std::size_t offset) {
    if (bytes.empty() || offset + sizeof(T) > bytes.size()) throw std::out_of_range("peek past the end");
    T value;
    std::memcpy(&value, &bytes[offset], sizeof(T));
    return value;
}

// FNV-1a 64 as the format defines it, to forge files whose only fault is elsewhere.
void resealChecksum(std::vector<char>& bytes) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (std::size_t i = 0; i + 8 < bytes.size(); ++i) {
        h ^= static_cast<unsigned char>(bytes[i]);
        h *= 0x100000001b3ULL;
    }
    std::memcpy(bytes.data() + bytes.size() - 8, &h, 8);
}

// Reads `path` expecting InvalidInput whose message names the file and contains `what`.
void expectRefused(const fs::path& path, const std::string& what) {
    try {
        readCheckpoint(path.string());
        ADD_FAILURE() << "accepted " << path << " (expected: " << what << ")";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput) << msg;
        EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
        EXPECT_NE(msg.find(what), std::string::npos) << "expected '" << what << "' in: " << msg;
    }
}

bool bitwiseEqual(const std::vector<Vec3d>& a, const std::vector<Vec3d>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(Vec3d)) == 0;
}

std::vector<std::string> filesIn(const fs::path& dir) { return haloex::testing::fileNamesIn(dir); }

}  // namespace

TEST(PortableRandomState, SetStateContinuesTheSequenceExactly) {
    PortableRandom a(12345);
    for (int i = 0; i < 37; ++i) a.normal();  // odd count of normals: a spare is pending
    a.uniform();
    const PortableRandomState state = a.state();
    EXPECT_TRUE(state.haveSpare);
    EXPECT_GT(state.draws, 37u);
    PortableRandom b(1);
    b.setState(state);
    EXPECT_EQ(b.state(), state);
    for (int i = 0; i < 100; ++i) {
        ASSERT_EQ(a.normal(), b.normal()) << i;
        ASSERT_EQ(a.below(1000), b.below(1000)) << i;
    }
}

TEST(Checkpoint, RoundTripIsBitwise) {
    const fs::path path = freshDir() / "run.cpt";
    const CheckpointData d = sampleData();
    writeCheckpoint(path.string(), d);
    EXPECT_EQ(fs::file_size(path), kAtomsStart + d.system.size() * kAtomBytes + 8);

    const CheckpointData r = readCheckpoint(path.string());
    EXPECT_EQ(r.step, d.step);
    EXPECT_EQ(r.time, d.time);
    EXPECT_EQ(r.rc, d.rc);
    EXPECT_EQ(r.rlist, d.rlist);
    EXPECT_EQ(r.nstlist, d.nstlist);
    EXPECT_EQ(r.dt, d.dt);
    EXPECT_EQ(r.seed, d.seed);
    EXPECT_EQ(r.temperature, d.temperature);
    EXPECT_EQ(r.thermostat, d.thermostat);
    EXPECT_EQ(r.tauT, d.tauT);
    EXPECT_EQ(r.thermostatEnergy, d.thermostatEnergy);
    EXPECT_EQ(r.pendingVelocityScale, d.pendingVelocityScale);
    EXPECT_EQ(r.thermostatRandom, d.thermostatRandom);
    EXPECT_EQ(r.atomCount, d.system.size());
    EXPECT_EQ(r.system.box.length, d.system.box.length);
    EXPECT_EQ(r.system.globalIds, d.system.globalIds);
    EXPECT_EQ(r.system.types, d.system.types);
    EXPECT_TRUE(bitwiseEqual(r.system.positions, d.system.positions));
    EXPECT_TRUE(bitwiseEqual(r.system.velocities, d.system.velocities));

    // Writing what was read gives the same bytes.
    const fs::path again = path.parent_path() / "again.cpt";
    writeCheckpoint(again.string(), r);
    EXPECT_EQ(fileBytes(again), fileBytes(path));

    const CheckpointData header = readCheckpointHeader(path.string());
    EXPECT_EQ(header.step, d.step);
    EXPECT_EQ(header.rlist, d.rlist);
    EXPECT_EQ(header.atomCount, d.system.size());
    EXPECT_EQ(header.system.size(), 0);
}

TEST(Checkpoint, TruncatedFilesAreRefusedWithBothSizes) {
    const fs::path dir = freshDir();
    const fs::path path = dir / "run.cpt";
    writeCheckpoint(path.string(), sampleData());
    const std::vector<char> bytes = fileBytes(path);
    const fs::path cut = dir / "cut.cpt";
    for (const std::size_t length : {std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{100}, kAtomCountOffset,
                                     kHeaderBytes - 1, kHeaderBytes, kHeaderBytes + 1, kAtomsStart,
                                     kAtomsStart + 5 * kAtomBytes, bytes.size() - 8, bytes.size() - 1}) {
        SCOPED_TRACE(fmt::format("length {}", length));
        writeBytes(cut, std::vector<char>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(length)));
        expectRefused(cut, "truncated");
        expectRefused(cut, fmt::format("got {}", length));
        EXPECT_THROW(readCheckpointHeader(cut.string()), Error);
    }
    std::vector<char> longer = bytes;
    longer.push_back('x');
    writeBytes(cut, longer);
    expectRefused(cut, "1 unexpected bytes after the checksum");
}

TEST(Checkpoint, FlippedBytesFailTheChecksum) {
    const fs::path dir = freshDir();
    const fs::path path = dir / "run.cpt";
    writeCheckpoint(path.string(), sampleData());
    const std::vector<char> bytes = fileBytes(path);
    const fs::path bad = dir / "bad.cpt";
    // The step, the thermostat energy, a position bit, a type, the checksum itself.
    for (const std::size_t offset : {std::size_t{16}, std::size_t{112}, kAtomsStart + 20 * kAtomBytes + 17,
                                     kAtomsStart + 999 * kAtomBytes + 8, bytes.size() - 1}) {
        SCOPED_TRACE(fmt::format("offset {}", offset));
        std::vector<char> flipped = bytes;
        flipped[offset] = static_cast<char>(flipped[offset] ^ 0x10);
        writeBytes(bad, flipped);
        expectRefused(bad, "checksum mismatch");
    }
}

TEST(Checkpoint, ForeignAndEmptyFilesAreNotCheckpoints) {
    const fs::path dir = freshDir();
    expectRefused(fs::path(HALOEX_TEST_DATA_DIR) / "ref-3000.gro", "not a haloex checkpoint");
    const fs::path empty = dir / "empty.cpt";
    writeBytes(empty, {});
    expectRefused(empty, "empty (0 bytes)");
    expectRefused(empty, "not a haloex checkpoint");
    const fs::path text = dir / "short.cpt";
    writeBytes(text, {'h', 'i', '\n'});
    expectRefused(text, "not a haloex checkpoint");
    try {
        readCheckpoint((dir / "missing.cpt").string());
        ADD_FAILURE() << "read a missing file";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Io);
        EXPECT_NE(std::string(e.what()).find("missing.cpt"), std::string::npos) << e.what();
    }
}

TEST(Checkpoint, NewerVersionsAndOtherByteOrderAreRefused) {
    const fs::path dir = freshDir();
    const fs::path path = dir / "run.cpt";
    writeCheckpoint(path.string(), sampleData());
    const std::vector<char> bytes = fileBytes(path);

    std::vector<char> newer = bytes;
    const std::uint32_t version = kCheckpointFormatVersion + 1;
    patch(newer, 8, version);
    resealChecksum(newer);
    writeBytes(dir / "newer.cpt", newer);
    expectRefused(dir / "newer.cpt", fmt::format("format version {} is newer", version));

    std::vector<char> swapped = bytes;
    std::reverse(swapped.begin() + 12, swapped.begin() + 16);
    writeBytes(dir / "swapped.cpt", swapped);
    expectRefused(dir / "swapped.cpt", "other byte order");
}

TEST(Checkpoint, InconsistentAtomsAreRefused) {
    const fs::path dir = freshDir();
    const fs::path path = dir / "run.cpt";
    const CheckpointData d = sampleData();
    writeCheckpoint(path.string(), d);
    const std::vector<char> bytes = fileBytes(path);

    // Atom 1 takes atom 0's id: a duplicate, checksum intact.
    std::vector<char> duplicate = bytes;
    patch(duplicate, kAtomsStart + kAtomBytes, peek<std::int64_t>(duplicate, kAtomsStart));
    resealChecksum(duplicate);
    writeBytes(dir / "dup.cpt", duplicate);
    expectRefused(dir / "dup.cpt", "ids must be unique");

    // A type that is neither +q nor -q.
    std::vector<char> badType = bytes;
    const std::int32_t type = 5;
    patch(badType, kAtomsStart + 3 * kAtomBytes + 8, type);
    resealChecksum(badType);
    writeBytes(dir / "type.cpt", badType);
    expectRefused(dir / "type.cpt", "has type 5");

    // A header atom count that does not match the atoms in the file.
    std::vector<char> count = bytes;
    const std::int64_t n = d.system.size() + 1;
    patch(count, kAtomCountOffset, n);
    resealChecksum(count);
    writeBytes(dir / "count.cpt", count);
    expectRefused(dir / "count.cpt", fmt::format("expected {} bytes for {} atoms", bytes.size() + kAtomBytes, n));

    // The writer refuses what it could not read back.
    CheckpointData unsorted = d;
    std::swap(unsorted.system.globalIds[3], unsorted.system.globalIds[4]);
    EXPECT_THROW(writeCheckpoint((dir / "unsorted.cpt").string(), unsorted), Error);
    CheckpointData ragged = d;
    ragged.system.velocities.pop_back();
    EXPECT_THROW(writeCheckpoint((dir / "ragged.cpt").string(), ragged), Error);
    EXPECT_FALSE(fs::exists(dir / "unsorted.cpt"));
    EXPECT_FALSE(fs::exists(dir / "ragged.cpt"));
}

TEST(Checkpoint, ReplacingKeepsThePreviousAndLeavesNoTemporary) {
    const fs::path dir = freshDir();
    const fs::path path = dir / "run.cpt";
    CheckpointData d = sampleData();
    writeCheckpoint(path.string(), d);
    EXPECT_EQ(filesIn(dir), (std::vector<std::string>{"run.cpt"}));
    d.step += 100;
    writeCheckpoint(path.string(), d);
    EXPECT_EQ(filesIn(dir), (std::vector<std::string>{"run.cpt", "run.cpt.prev"}));
    EXPECT_EQ(readCheckpoint(path.string()).step, d.step);
    EXPECT_EQ(readCheckpoint(path.string() + ".prev").step, d.step - 100);
}

TEST(Checkpoint, AFailedWriteLeavesTheTargetIntactAndNoTemporary) {
    const fs::path dir = freshDir();
    const fs::path path = dir / "run.cpt";
    CheckpointData d = sampleData();
    writeCheckpoint(path.string(), d);
    const std::vector<char> before = fileBytes(path);

    // A full disk, simulated by a file-size limit: the write fails halfway.
    rlimit saved{};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
    auto* previousHandler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit small = saved;
    small.rlim_cur = 4096;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    d.step += 100;
    std::string message;
    ErrorKind kind = ErrorKind::Internal;
    try {
        writeCheckpoint(path.string(), d);
    } catch (const Error& e) {
        message = e.what();
        kind = e.kind();
    }
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
    std::signal(SIGXFSZ, previousHandler);

    EXPECT_EQ(kind, ErrorKind::Io) << message;
    EXPECT_NE(message.find("run.cpt.tmp."), std::string::npos) << message;
    EXPECT_EQ(filesIn(dir), (std::vector<std::string>{"run.cpt"}));
    EXPECT_EQ(fileBytes(path), before);
    EXPECT_EQ(readCheckpoint(path.string()).step, d.step - 100);
}

TEST(Checkpoint, UnwritableDirectoryIsAnIoError) {
    const fs::path dir = freshDir();
    const fs::path path = dir / "no-such-dir" / "run.cpt";
    try {
        writeCheckpoint(path.string(), sampleData());
        ADD_FAILURE() << "wrote into a missing directory";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Io);
        EXPECT_NE(std::string(e.what()).find("no-such-dir"), std::string::npos) << e.what();
    }
    EXPECT_EQ(filesIn(dir), std::vector<std::string>{});
}

TEST(Checkpoint, TheWriterReplacesOnlyRegularFiles) {
    const fs::path dir = freshDir();
    // A FIFO (as root, a device node such as /dev/null behaves the same: the
    // rename used to replace it with a regular file).
    const fs::path fifo = dir / "run.cpt";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
    try {
        writeCheckpoint(fifo.string(), sampleData());
        ADD_FAILURE() << "replaced a FIFO";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
        EXPECT_NE(std::string(e.what()).find(fifo.string() + ": the path is a FIFO"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(fs::is_fifo(fifo));
    EXPECT_EQ(filesIn(dir), std::vector<std::string>{"run.cpt"});
}

TEST(Checkpoint, APlantedLinkUnderAPredictableTemporaryNameIsNotFollowed) {
    const fs::path dir = freshDir();
    const fs::path victim = dir / "victim";
    writeBytes(victim, {'p', 'r', 'e', 'c', 'i', 'o', 'u', 's'});
    const fs::path path = dir / "run.cpt";
    // The temporary used to be "<path>.tmp.<pid>", opened without O_EXCL.
    fs::create_symlink(victim, path.string() + ".tmp." + std::to_string(::getpid()));
    writeCheckpoint(path.string(), sampleData());
    EXPECT_EQ(fileBytes(victim), (std::vector<char>{'p', 'r', 'e', 'c', 'i', 'o', 'u', 's'}));
    EXPECT_FALSE(fs::is_symlink(path));
    EXPECT_EQ(readCheckpoint(path.string()).step, sampleData().step);
}

TEST(Checkpoint, ASparseFileIsRefusedBeforeItsAtomsAreAllocated) {
    // A valid header claiming 20 million atoms over a hole: 1.3 GB long, a few
    // KB on disk. The arrays for it (1.2 GB) used to be allocated before the
    // checksum was checked -- by every virtual rank.
    const fs::path dir = freshDir();
    const fs::path path = dir / "sparse.cpt";
    writeCheckpoint(path.string(), sampleData());
    std::vector<char> bytes = fileBytes(path);
    const std::int64_t atoms = 20'000'000;
    bytes.resize(kAtomsStart);
    patch(bytes, kAtomCountOffset, atoms);
    writeBytes(path, bytes);
    fs::resize_file(path, kAtomsStart + static_cast<std::size_t>(atoms) * kAtomBytes + 8);

    // Room for the reading, not for the arrays.
    std::size_t used = 0;
    {
        std::ifstream status("/proc/self/status");
        std::string line;
        while (std::getline(status, line)) {
            if (line.starts_with("VmSize:")) used = std::stoull(line.substr(7)) * 1024;
        }
    }
    ASSERT_GT(used, 0u);
    rlimit saved{};
    ASSERT_EQ(::getrlimit(RLIMIT_AS, &saved), 0);
    rlimit small = saved;
    small.rlim_cur = used + (std::size_t{256} << 20);
    ASSERT_EQ(::setrlimit(RLIMIT_AS, &small), 0);
    std::string message;
    try {
        readCheckpoint(path.string());
        message = "accepted";
    } catch (const Error& e) {
        message = e.what();
    } catch (const std::bad_alloc&) {
        message = "std::bad_alloc: the atoms were allocated before the checksum was checked";
    }
    ASSERT_EQ(::setrlimit(RLIMIT_AS, &saved), 0);
    EXPECT_NE(message.find("checksum mismatch"), std::string::npos) << message;
}
// Format 2 records where each continuing output stood (OutputFiles); the
// header read returns them without the atoms.
TEST(Checkpoint, OutputPositionsRoundTrip) {
    const fs::path dir = freshDir();
    const fs::path path = dir / "run.cpt";
    CheckpointData d = sampleData();
    d.outputs = {OutputPosition{"--traj", "/scratch/run/traj.gro", 123456789, 25, 1250, 1u << 20, 0x1234567890abcdefULL,
                                50},
                 OutputPosition{"--energy", "/scratch/e.xvg", 7, 1, 0, 7, 42}};
    writeCheckpoint(path.string(), d);
    const CheckpointData r = readCheckpoint(path.string());
    EXPECT_TRUE(r.outputsRecorded);
    EXPECT_EQ(r.outputs, d.outputs);
    EXPECT_EQ(readCheckpointHeader(path.string()).outputs, d.outputs);
    EXPECT_TRUE(bitwiseEqual(r.system.positions, d.system.positions));
    const fs::path again = dir / "again.cpt";
    writeCheckpoint(again.string(), r);
    EXPECT_EQ(fileBytes(again), fileBytes(path));

    // A damaged section is refused by name, before anything is allocated for it.
    std::vector<char> bytes = fileBytes(path);
    std::vector<char> many = bytes;
    patch(many, kHeaderBytes, std::uint32_t{100000});
    resealChecksum(many);
    writeBytes(dir / "many.cpt", many);
    expectRefused(dir / "many.cpt", "corrupt output section (100000 outputs)");
    std::vector<char> longRole = bytes;
    patch(longRole, kHeaderBytes + 16, std::uint32_t{1u << 30});
    resealChecksum(longRole);
    writeBytes(dir / "role.cpt", longRole);
    expectRefused(dir / "role.cpt", "corrupt output section (a role past its end)");
    std::vector<char> huge = bytes;
    patch(huge, kHeaderBytes - 8, std::uint64_t{1} << 40);
    resealChecksum(huge);
    writeBytes(dir / "huge.cpt", huge);
    expectRefused(dir / "huge.cpt", "inconsistent output-section length");
}

// Format 2 (before outputs recorded their spacing) is still read: every 0,
// so a restart takes --traj-every as given.
TEST(Checkpoint, FormatTwoIsStillReadWithoutSpacing) {
    const fs::path dir = freshDir();
    CheckpointData d = sampleData();
    d.outputs = {OutputPosition{"--traj", "/scratch/traj.h5", 4096, 4, 30, 4096, 77, 10}};
    writeCheckpoint((dir / "v3.cpt").string(), d);
    std::vector<char> bytes = fileBytes(dir / "v3.cpt");
    // Format 2's section: the same without the i64 energy-step spacing after
    // the count and without the i64 `every` after the tail checksum.
    const std::size_t everyAt = kHeaderBytes + 16 + 48;
    bytes.erase(bytes.begin() + static_cast<std::ptrdiff_t>(everyAt),
                bytes.begin() + static_cast<std::ptrdiff_t>(everyAt + 8));
    bytes.erase(bytes.begin() + static_cast<std::ptrdiff_t>(kHeaderBytes + 8),
                bytes.begin() + static_cast<std::ptrdiff_t>(kHeaderBytes + 16));
    std::uint64_t section = 0;
    std::memcpy(&section, bytes.data() + kHeaderBytes - 8, sizeof section);
    patch(bytes, 8, std::uint32_t{2});
    patch(bytes, kHeaderBytes - 8, section - 16);
    resealChecksum(bytes);
    writeBytes(dir / "v2.cpt", bytes);
    const CheckpointData r = readCheckpoint((dir / "v2.cpt").string());
    ASSERT_EQ(r.outputs.size(), 1u);
    OutputPosition expected = d.outputs[0];
    expected.every = 0;
    EXPECT_EQ(r.outputs[0], expected);
    EXPECT_EQ(r.thermoEvery, 0) << "format 2 recorded no energy-step spacing";
}

TEST(Checkpoint, RecordsTheEnergyStepSpacing) {
    const fs::path dir = freshDir();
    CheckpointData d = sampleData();
    d.thermoEvery = 125;
    writeCheckpoint((dir / "run.cpt").string(), d);
    EXPECT_EQ(readCheckpoint((dir / "run.cpt").string()).thermoEvery, 125);
    EXPECT_EQ(readCheckpointHeader((dir / "run.cpt").string()).thermoEvery, 125);
}

// Checkpoints of format 1 (before output positions) are still read; they
// say that they recorded no outputs.
TEST(Checkpoint, FormatOneIsStillRead) {
    const fs::path dir = freshDir();
    const fs::path path = dir / "run.cpt";
    const CheckpointData d = sampleData();
    writeCheckpoint(path.string(), d);
    std::vector<char> bytes = fileBytes(path);
    // Format 1: no section length, no section.
    bytes.erase(bytes.begin() + 168, bytes.begin() + kAtomsStart);
    patch(bytes, 8, std::uint32_t{1});
    resealChecksum(bytes);
    writeBytes(dir / "v1.cpt", bytes);
    const CheckpointData r = readCheckpoint((dir / "v1.cpt").string());
    EXPECT_FALSE(r.outputsRecorded);
    EXPECT_TRUE(r.outputs.empty());
    EXPECT_EQ(r.step, d.step);
    EXPECT_EQ(r.thermostatRandom, d.thermostatRandom);
    EXPECT_TRUE(bitwiseEqual(r.system.positions, d.system.positions));
    EXPECT_TRUE(bitwiseEqual(r.system.velocities, d.system.velocities));
    EXPECT_FALSE(readCheckpointHeader((dir / "v1.cpt").string()).outputsRecorded);
}
