#include "haloex/md/checkpoint.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <limits>
#include <memory>
#include <span>
#include <sys/stat.h>
#include <type_traits>
#include <unistd.h>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/detail/core/fnv1a.hpp"
#include "haloex/detail/core/safe_file.hpp"

namespace haloex::md {
namespace {

constexpr std::array<char, 8> kMagic{'H', 'A', 'L', 'O', 'E', 'X', 'C', 'P'};
constexpr std::uint32_t kByteOrderMarker = 0x01020304u;
constexpr std::uint32_t kSwappedByteOrderMarker = 0x04030201u;
constexpr std::size_t kHeaderBytesV1 = 168;  // everything up to and including the atom count
constexpr std::size_t kHeaderBytes = 176;    // format 2: and the output section's length
// Bounds an output section may have (a few outputs with their paths).
constexpr std::size_t kMaxOutputSectionBytes = std::size_t{1} << 20;
constexpr std::size_t kMaxOutputs = 64;
constexpr std::size_t kAtomBytes = 64;  // id, type, zero, x[3], v[3]
constexpr std::size_t kChecksumBytes = 8;
constexpr std::size_t kIoBlockBytes = std::size_t{1} << 20;

std::string systemError() { return std::strerror(errno); }

class FileDescriptor {
public:
    explicit FileDescriptor(int fd) : fd_(fd) {}
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    ~FileDescriptor() {
        if (fd_ >= 0) ::close(fd_);
    }
    int get() const { return fd_; }
    // Closes now and reports the error close() found (delayed write errors on some file systems).
    int close() {
        const int rc = ::close(fd_);
        fd_ = -1;
        return rc;
    }

private:
    int fd_;
};

// ---- encoding ---------------------------------------------------------------

class ByteWriter {
public:
    template <class T>
    void put(const T& value) {
        static_assert(std::is_trivially_copyable_v<T>);
        const auto* p = reinterpret_cast<const std::byte*>(&value);
        bytes_.insert(bytes_.end(), p, p + sizeof(T));
    }
    std::vector<std::byte>& bytes() { return bytes_; }

private:
    std::vector<std::byte> bytes_;
};

class ByteReader {
public:
    explicit ByteReader(std::span<const std::byte> bytes) : bytes_(bytes) {}
    template <class T>
    T get() {
        static_assert(std::is_trivially_copyable_v<T>);
        HALOEX_ASSERT(offset_ + sizeof(T) <= bytes_.size(), "checkpoint field read past its buffer");
        T value;
        std::memcpy(&value, bytes_.data() + offset_, sizeof(T));
        offset_ += sizeof(T);
        return value;
    }

private:
    std::span<const std::byte> bytes_;
    std::size_t offset_ = 0;
};

std::int32_t thermostatCode(const std::string& name) {
    if (name == "none") return 0;
    if (name == "v-rescale") return 1;
    throwError(ErrorKind::InvalidInput,
               fmt::format("checkpoint: unknown thermostat '{}' (use none or v-rescale)", name));
}

std::vector<std::byte> encodeOutputs(const std::vector<OutputPosition>& outputs, std::int64_t thermoEvery) {
    HALOEX_ASSERT(outputs.size() <= kMaxOutputs, "too many continuing outputs for a checkpoint");
    ByteWriter w;
    w.put(static_cast<std::uint32_t>(outputs.size()));
    w.put(std::uint32_t{0});
    w.put(thermoEvery);
    for (const OutputPosition& o : outputs) {
        w.put(static_cast<std::uint32_t>(o.role.size()));
        w.put(static_cast<std::uint32_t>(o.path.size()));
        w.put(o.bytes);
        w.put(o.records);
        w.put(o.lastStep);
        w.put(o.tailBytes);
        w.put(o.tailChecksum);
        w.put(o.every);
        for (const char c : o.role) w.put(c);
        for (const char c : o.path) w.put(c);
        while (w.bytes().size() % 8 != 0) w.put(char{0});
    }
    HALOEX_ASSERT(w.bytes().size() <= kMaxOutputSectionBytes, "checkpoint output section too large (long paths?)");
    return std::move(w.bytes());
}

std::vector<std::byte> encodeHeader(const CheckpointData& d) {
    ByteWriter w;
    for (const char c : kMagic) w.put(c);
    w.put(kCheckpointFormatVersion);
    w.put(kByteOrderMarker);
    w.put(d.step);
    w.put(d.time);
    for (int k = 0; k < 3; ++k) w.put(d.system.box.length[k]);
    w.put(d.rc);
    w.put(d.rlist);
    w.put(static_cast<std::int32_t>(d.nstlist));
    w.put(thermostatCode(d.thermostat));
    w.put(d.dt);
    w.put(d.seed);
    w.put(d.temperature);
    w.put(d.tauT);
    w.put(d.thermostatEnergy);
    w.put(d.pendingVelocityScale);
    w.put(d.thermostatRandom.seed);
    w.put(d.thermostatRandom.draws);
    w.put(d.thermostatRandom.spareNormal);
    w.put(static_cast<std::uint32_t>(d.thermostatRandom.haveSpare ? 1 : 0));
    w.put(std::uint32_t{0});
    w.put(static_cast<std::int64_t>(d.system.size()));
    HALOEX_ASSERT(w.bytes().size() == kHeaderBytesV1, "checkpoint header size changed: update kHeaderBytes");
    const std::vector<std::byte> outputs = encodeOutputs(d.outputs, d.thermoEvery);
    w.put(static_cast<std::uint64_t>(outputs.size()));
    HALOEX_ASSERT(w.bytes().size() == kHeaderBytes, "checkpoint header size changed: update kHeaderBytes");
    w.bytes().insert(w.bytes().end(), outputs.begin(), outputs.end());
    return std::move(w.bytes());
}

// The header's fields after the magic, version and byte-order marker were checked.
CheckpointData decodeHeader(std::span<const std::byte> header) {
    ByteReader r(header);
    r.get<std::array<char, 8>>();
    r.get<std::uint32_t>();
    r.get<std::uint32_t>();
    CheckpointData d;
    d.step = r.get<std::int64_t>();
    d.time = r.get<double>();
    for (int k = 0; k < 3; ++k) d.system.box.length[k] = r.get<double>();
    d.rc = r.get<double>();
    d.rlist = r.get<double>();
    d.nstlist = r.get<std::int32_t>();
    const std::int32_t thermostat = r.get<std::int32_t>();
    d.thermostat = thermostat == 0 ? "none" : thermostat == 1 ? "v-rescale" : fmt::format("#{}", thermostat);
    d.dt = r.get<double>();
    d.seed = r.get<std::uint64_t>();
    d.temperature = r.get<double>();
    d.tauT = r.get<double>();
    d.thermostatEnergy = r.get<double>();
    d.pendingVelocityScale = r.get<double>();
    d.thermostatRandom.seed = r.get<std::uint64_t>();
    d.thermostatRandom.draws = r.get<std::uint64_t>();
    d.thermostatRandom.spareNormal = r.get<double>();
    d.thermostatRandom.haveSpare = r.get<std::uint32_t>() != 0;
    r.get<std::uint32_t>();
    d.atomCount = r.get<std::int64_t>();
    return d;
}

struct PackedAtom {
    std::int64_t globalId;
    std::int32_t type;
    std::int32_t zero;
    double position[3];
    double velocity[3];
};
static_assert(sizeof(PackedAtom) == kAtomBytes);

// ---- writing ----------------------------------------------------------------

// Buffered writes to the checkpoint's temporary with a running checksum.
class ChecksummedSink {
public:
    explicit ChecksummedSink(AtomicFileWriter& file) : file_(file) { buffer_.reserve(kIoBlockBytes); }

    void put(std::span<const std::byte> bytes) {
        checksum_.add(bytes);
        buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
        if (buffer_.size() >= kIoBlockBytes) flush();
    }
    // Writes the checksum of everything put so far (not itself checksummed).
    void finish() {
        const std::uint64_t sum = checksum_.value();
        const auto* p = reinterpret_cast<const std::byte*>(&sum);
        buffer_.insert(buffer_.end(), p, p + sizeof(sum));
        flush();
    }

private:
    void flush() {
        file_.write(buffer_);
        buffer_.clear();
    }

    AtomicFileWriter& file_;
    std::vector<std::byte> buffer_;
    Fnv1a checksum_;
};

void requireWritable(const CheckpointData& d) {
    d.system.validate();
    thermostatCode(d.thermostat);
    const auto& ids = d.system.globalIds;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || (i > 0 && ids[i] <= ids[i - 1])) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("checkpoint: atom {} has global id {} after {}: the atoms must be sorted by "
                                   "unique, non-negative global ids (gather them with gatherAtomsOnRoot)",
                                   i, ids[i], i > 0 ? ids[i - 1] : -1));
        }
    }
}

void writeContents(AtomicFileWriter& file, const CheckpointData& d) {
    ChecksummedSink sink(file);
    sink.put(encodeHeader(d));
    std::vector<PackedAtom> block;
    const std::size_t atomsPerBlock = kIoBlockBytes / kAtomBytes;
    block.reserve(atomsPerBlock);
    const System& s = d.system;
    for (int i = 0; i < s.size(); ++i) {
        block.push_back(PackedAtom{s.globalIds[i],
                                   s.types[i],
                                   0,
                                   {s.positions[i].x, s.positions[i].y, s.positions[i].z},
                                   {s.velocities[i].x, s.velocities[i].y, s.velocities[i].z}});
        if (block.size() == atomsPerBlock || i + 1 == s.size()) {
            sink.put(std::as_bytes(std::span(block)));
            block.clear();
        }
    }
    sink.finish();
}

// ---- reading ----------------------------------------------------------------

[[noreturn]] void refuse(const std::string& path, const std::string& what) {
    throwError(ErrorKind::InvalidInput, fmt::format("checkpoint '{}': {}", path, what));
}

std::string printable(std::span<const std::byte> bytes) {
    std::string s;
    for (const std::byte b : bytes) {
        const char c = static_cast<char>(b);
        s += (c >= 0x20 && c < 0x7f) ? c : '.';
    }
    return s;
}

void readExactly(int fd, std::byte* data, std::size_t size, const std::string& path, std::size_t expected) {
    std::size_t got = 0;
    while (got < size) {
        const ssize_t n = ::read(fd, data + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throwError(ErrorKind::Io, fmt::format("cannot read checkpoint '{}': {}", path, systemError()));
        if (n == 0) {
            refuse(path,
                   fmt::format("truncated while reading (expected {} bytes): was it replaced meanwhile?", expected));
        }
        got += static_cast<std::size_t>(n);
    }
}

// The output section, read from an unverified file: every length is checked
// against what is left before it is used. Format 3 also gives the energy-step
// spacing (into *thermoEvery).
std::vector<OutputPosition> decodeOutputs(std::span<const std::byte> section, const std::string& path,
                                          std::uint32_t version, std::int64_t* thermoEvery) {
    std::size_t offset = 0;
    const auto take = [&](std::size_t bytes, const char* what) {
        if (bytes > section.size() - offset)
            refuse(path, fmt::format("corrupt output section ({} past its end)", what));
        const std::span<const std::byte> field = section.subspan(offset, bytes);
        offset += bytes;
        return field;
    };
    const auto number = [&]<class T>(T, const char* what) {
        T value;
        std::memcpy(&value, take(sizeof(T), what).data(), sizeof(T));
        return value;
    };
    const auto count = number(std::uint32_t{}, "the output count");
    number(std::uint32_t{}, "padding");
    if (version >= 3) {
        *thermoEvery = number(std::int64_t{}, "the energy-step spacing");
        if (*thermoEvery < 0) refuse(path, fmt::format("corrupt output section (energy steps every {})", *thermoEvery));
    }
    if (count > kMaxOutputs) refuse(path, fmt::format("corrupt output section ({} outputs)", count));
    std::vector<OutputPosition> outputs(count);
    for (OutputPosition& o : outputs) {
        const auto roleBytes = number(std::uint32_t{}, "a role length");
        const auto pathBytes = number(std::uint32_t{}, "a path length");
        o.bytes = number(std::uint64_t{}, "a file length");
        o.records = number(std::int64_t{}, "a record count");
        o.lastStep = number(std::int64_t{}, "a step");
        o.tailBytes = number(std::uint64_t{}, "a tail length");
        o.tailChecksum = number(std::uint64_t{}, "a tail checksum");
        if (version >= 3) o.every = number(std::int64_t{}, "a record spacing");
        const auto role = take(roleBytes, "a role");
        const auto file = take(pathBytes, "a path");
        o.role.assign(reinterpret_cast<const char*>(role.data()), role.size());
        o.path.assign(reinterpret_cast<const char*>(file.data()), file.size());
        take((8 - offset % 8) % 8, "padding");
        if (o.tailBytes > o.bytes || o.tailBytes > kOutputTailBytes || o.records < 0 || o.lastStep < -1 ||
            o.every < 0) {
            refuse(path, fmt::format("corrupt output section (output '{}': {} bytes, tail {}, {} records, last step "
                                     "{}, every {})",
                                     o.role, o.bytes, o.tailBytes, o.records, o.lastStep, o.every));
        }
    }
    if (offset != section.size()) refuse(path, "corrupt output section (bytes after its last output)");
    return outputs;
}

// The header's settings, checked before anything adopts them: a damaged
// field used to surface as a bad option the user never gave ("--dt -1 ps:
// the time step must be positive").
void requireSaneSettings(const std::string& path, const CheckpointData& d) {
    const auto positive = [](double x) { return std::isfinite(x) && x > 0.0; };
    std::string bad;
    if (d.step < 0) bad = fmt::format("step {}", d.step);
    if (!positive(d.dt)) bad = fmt::format("time step {} ps", d.dt);
    if (!positive(d.rc)) bad = fmt::format("cutoff {} nm", d.rc);
    if (!std::isfinite(d.rlist) || !(d.rlist >= d.rc)) bad = fmt::format("rlist {} nm (cutoff {} nm)", d.rlist, d.rc);
    if (d.nstlist <= 0) bad = fmt::format("nstlist {}", d.nstlist);
    if (!positive(d.temperature)) bad = fmt::format("temperature {} K", d.temperature);
    if (d.thermostat == "v-rescale" ? !positive(d.tauT) : !(std::isfinite(d.tauT) && d.tauT >= 0.0)) {
        bad = fmt::format("tau-t {} ps", d.tauT);
    }
    if (d.thermostat != "none" && d.thermostat != "v-rescale") bad = fmt::format("thermostat code {}", d.thermostat);
    for (int k = 0; k < 3; ++k) {
        if (!positive(d.system.box.length[k])) bad = fmt::format("box length {} nm", d.system.box.length[k]);
    }
    if (!bad.empty()) {
        refuse(path, fmt::format("corrupt header ({}): the file is damaged; '{}' holds the previous checkpoint, if any",
                                 bad, previousCheckpointPath(path)));
    }
}

struct OpenCheckpoint {
    std::unique_ptr<FileDescriptor> fd;
    std::vector<std::byte> header;
    CheckpointData data;  // header fields only
    std::size_t expectedSize = 0;
};

OpenCheckpoint openCheckpoint(const std::string& path) {
    OpenCheckpoint cp;
    cp.fd = std::make_unique<FileDescriptor>(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (cp.fd->get() < 0) {
        const int error = errno;
        const std::string prev = previousCheckpointPath(path);
        struct stat st {};
        if (error == ENOENT && ::lstat(prev.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
            // Where the file system cannot exchange two names, a run killed
            // between the checkpoint's two renames leaves only the previous copy.
            throwError(ErrorKind::Io, fmt::format("cannot open checkpoint '{}': {}; its previous copy '{}' exists (a "
                                                  "checkpoint write was interrupted): restart from it with "
                                                  "--restart {}",
                                                  path, std::strerror(error), prev, prev));
        }
        throwError(ErrorKind::Io, fmt::format("cannot open checkpoint '{}': {}", path, std::strerror(error)));
    }
    struct stat st {};
    if (::fstat(cp.fd->get(), &st) != 0) {
        throwError(ErrorKind::Io, fmt::format("cannot stat checkpoint '{}': {}", path, systemError()));
    }
    if (!S_ISREG(st.st_mode)) refuse(path, "not a regular file");
    const auto size = static_cast<std::size_t>(st.st_size);
    if (size == 0) {
        refuse(path, fmt::format("the file is empty (0 bytes), not a haloex checkpoint: was its write interrupted? "
                                 "'{}.prev' holds the previous checkpoint, if any",
                                 path));
    }
    cp.header.resize(std::min(size, kHeaderBytesV1));
    readExactly(cp.fd->get(), cp.header.data(), cp.header.size(), path, size);
    const std::size_t magicBytes = std::min(cp.header.size(), kMagic.size());
    if (std::memcmp(cp.header.data(), kMagic.data(), magicBytes) != 0) {
        refuse(path, fmt::format("not a haloex checkpoint: it does not start with \"HALOEXCP\" (it starts with "
                                 "\"{}\"); give the file --cpt wrote",
                                 printable(std::span(cp.header).first(magicBytes))));
    }
    if (size < kHeaderBytesV1) {
        refuse(path, fmt::format("truncated: expected at least {} bytes of header, got {}", kHeaderBytesV1, size));
    }
    ByteReader r(cp.header);
    r.get<std::array<char, 8>>();
    const auto version = r.get<std::uint32_t>();
    const auto marker = r.get<std::uint32_t>();
    if (marker == kSwappedByteOrderMarker) {
        refuse(path, "written on a machine with the other byte order; restart on a machine like the one that "
                     "wrote it");
    }
    if (marker != kByteOrderMarker) refuse(path, fmt::format("corrupt header (byte-order marker {:#010x})", marker));
    if (version == 0) refuse(path, "corrupt header (format version 0)");
    if (version > kCheckpointFormatVersion) {
        refuse(path, fmt::format("format version {} is newer than this haloex reads (up to {}); use the haloex "
                                 "version that wrote it, or a newer one",
                                 version, kCheckpointFormatVersion));
    }
    cp.data = decodeHeader(cp.header);
    requireSaneSettings(path, cp.data);
    cp.data.outputsRecorded = version >= 2;
    if (version >= 2) {
        // The output section's length, then the section itself (bounded
        // before anything is allocated for it).
        if (size < kHeaderBytes) {
            refuse(path, fmt::format("truncated: expected at least {} bytes of header, got {}", kHeaderBytes, size));
        }
        std::uint64_t sectionBytes = 0;
        readExactly(cp.fd->get(), reinterpret_cast<std::byte*>(&sectionBytes), sizeof sectionBytes, path, size);
        if (sectionBytes > kMaxOutputSectionBytes) {
            refuse(path, fmt::format("inconsistent output-section length {} in the header", sectionBytes));
        }
        if (sectionBytes > size - kHeaderBytes) {
            refuse(path, fmt::format("truncated: expected at least {} bytes of header and output section, got {}",
                                     kHeaderBytes + sectionBytes, size));
        }
        const auto* p = reinterpret_cast<const std::byte*>(&sectionBytes);
        cp.header.insert(cp.header.end(), p, p + sizeof sectionBytes);
        const std::size_t sectionStart = cp.header.size();
        cp.header.resize(sectionStart + sectionBytes);
        readExactly(cp.fd->get(), cp.header.data() + sectionStart, sectionBytes, path, size);
        cp.data.outputs =
            decodeOutputs(std::span(cp.header).subspan(sectionStart), path, version, &cp.data.thermoEvery);
    }
    const std::size_t before = cp.header.size();  // every byte before the atoms
    const std::int64_t n = cp.data.atomCount;
    const auto maxAtoms =
        static_cast<std::int64_t>((std::numeric_limits<std::int64_t>::max() - before - kChecksumBytes) / kAtomBytes);
    if (n < 0 || n > maxAtoms) refuse(path, fmt::format("inconsistent atom count {} in the header", n));
    cp.expectedSize = before + static_cast<std::size_t>(n) * kAtomBytes + kChecksumBytes;
    if (size < cp.expectedSize) {
        refuse(path, fmt::format("truncated: expected {} bytes for {} atoms, got {}", cp.expectedSize, n, size));
    }
    if (size > cp.expectedSize) {
        refuse(path, fmt::format("{} unexpected bytes after the checksum (expected {} bytes for {} atoms, got {})",
                                 size - cp.expectedSize, cp.expectedSize, n, size));
    }
    if (n > std::numeric_limits<int>::max()) {
        refuse(path, fmt::format("{} atoms: more than this haloex holds in one system", n));
    }
    return cp;
}

void requireConsistentAtoms(const std::string& path, const CheckpointData& d) {
    const System& s = d.system;
    for (int i = 0; i < s.size(); ++i) {
        if (s.types[i] != 0 && s.types[i] != 1) {
            refuse(path,
                   fmt::format("atom {} (global id {}) has type {} (expected 0 or 1)", i, s.globalIds[i], s.types[i]));
        }
        if (s.globalIds[i] < 0 || (i > 0 && s.globalIds[i] <= s.globalIds[i - 1])) {
            refuse(path, fmt::format("atom {} has global id {} after {}: ids must be unique, non-negative and "
                                     "sorted",
                                     i, s.globalIds[i], i > 0 ? s.globalIds[i - 1] : -1));
        }
    }
    if (d.thermostat != "none" && d.thermostat != "v-rescale") {
        refuse(path, fmt::format("unknown thermostat code {}", d.thermostat));
    }
    if (!(d.dt > 0.0) || !(d.rc > 0.0) || !(d.rlist >= d.rc) || d.nstlist <= 0 || d.step < 0) {
        refuse(path, fmt::format("inconsistent settings (step {}, dt {}, rc {}, rlist {}, nstlist {})", d.step, d.dt,
                                 d.rc, d.rlist, d.nstlist));
    }
    try {
        s.validate();
    } catch (const Error& e) {
        refuse(path, e.what());
    }
}

}  // namespace

std::string writeCheckpoint(const std::string& path, const CheckpointData& data) {
    requireWritable(data);
    // A temporary with an unpredictable name, renamed onto `path` only when
    // complete and durable and only when `path` is a regular file (or new);
    // removed on every failure. The checkpoint it replaces becomes the
    // previous copy by renames alone (never a link or a copy through a name).
    AtomicFileWriter file(path, "checkpoint");
    writeContents(file, data);
    return file.commitKeepingPrevious(previousCheckpointPath(path));
}

std::string previousCheckpointPath(const std::string& path) { return path + ".prev"; }

bool isHardLinkedPreviousCheckpoint(const std::string& path) {
    struct stat a {
    }, b{};
    // lstat: only two names of one regular file count, never a link to it.
    return ::lstat(path.c_str(), &a) == 0 && ::lstat(previousCheckpointPath(path).c_str(), &b) == 0 &&
           S_ISREG(a.st_mode) && S_ISREG(b.st_mode) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

std::optional<std::string> separateHardLinkedPreviousCheckpoint(const std::string& path) {
    if (!isHardLinkedPreviousCheckpoint(path)) return std::nullopt;
    const std::string prev = previousCheckpointPath(path);
    if (::unlink(prev.c_str()) != 0) {
        throwError(ErrorKind::Io, fmt::format("--cpt {}: its previous copy {} is a second name of it (left by an older "
                                              "haloex-md), and it cannot be removed: {}; remove it with: rm {}",
                                              path, prev, systemError(), prev));
    }
    return fmt::format("Removed {}: it was a second name of {} (a hard link an older haloex-md left), not a "
                       "previous checkpoint; {} is unchanged",
                       prev, path, path);
}

CheckpointData readCheckpointHeader(const std::string& path) { return openCheckpoint(path).data; }

CheckpointData readCheckpoint(const std::string& path) {
    OpenCheckpoint cp = openCheckpoint(path);
    CheckpointData d = std::move(cp.data);
    const auto n = static_cast<std::size_t>(d.atomCount);
    std::vector<PackedAtom> block(kIoBlockBytes / kAtomBytes);
    // Two passes: the checksum first, through one block, so that a corrupt
    // or sparse file (a header claiming millions of atoms over a hole) is
    // refused before the atom arrays are allocated; then the atoms, checked
    // again so that what is kept is what was verified.
    const auto readAtoms = [&](const auto& perBlock) {
        if (::lseek(cp.fd->get(), static_cast<off_t>(cp.header.size()), SEEK_SET) < 0) {
            throwError(ErrorKind::Io, fmt::format("cannot seek in checkpoint '{}': {}", path, systemError()));
        }
        Fnv1a checksum;
        checksum.add(cp.header);
        for (std::size_t first = 0; first < n; first += block.size()) {
            const std::size_t count = std::min(block.size(), n - first);
            const auto bytes = std::as_writable_bytes(std::span(block).first(count));
            readExactly(cp.fd->get(), bytes.data(), bytes.size(), path, cp.expectedSize);
            checksum.add(bytes);
            perBlock(first, count);
        }
        std::uint64_t stored = 0;
        readExactly(cp.fd->get(), reinterpret_cast<std::byte*>(&stored), sizeof(stored), path, cp.expectedSize);
        if (stored != checksum.value()) {
            refuse(path, fmt::format("checksum mismatch (stored {:#018x}, computed {:#018x}): the file is corrupt; "
                                     "'{}.prev' holds the previous checkpoint, if any",
                                     stored, checksum.value(), path));
        }
    };
    readAtoms([](std::size_t, std::size_t) {});
    System& s = d.system;
    s.positions.resize(n);
    s.velocities.resize(n);
    s.types.resize(n);
    s.globalIds.resize(n);
    readAtoms([&](std::size_t first, std::size_t count) {
        for (std::size_t k = 0; k < count; ++k) {
            const PackedAtom& a = block[k];
            s.globalIds[first + k] = a.globalId;
            s.types[first + k] = a.type;
            s.positions[first + k] = Vec3d{a.position[0], a.position[1], a.position[2]};
            s.velocities[first + k] = Vec3d{a.velocity[0], a.velocity[1], a.velocity[2]};
        }
    });
    requireConsistentAtoms(path, d);
    return d;
}

}  // namespace haloex::md
