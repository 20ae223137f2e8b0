#include "haloex/md/output_files.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <span>

#include "haloex/core/error.hpp"
#include "haloex/detail/core/fnv1a.hpp"
#include "haloex/md/output_backup.hpp"

namespace haloex::md {
namespace {

std::string absolutePath(const std::string& path) {
    std::error_code ec;
    const std::filesystem::path p = std::filesystem::absolute(path, ec);
    return ec ? path : p.lexically_normal().string();
}

// How a refusal names an output's spacing: the option that sets it, what a
// record is, and what the file is (the energy file's header is a record at no step).
struct SpacingWords {
    const char* option;
    const char* record;
    const char* file;
    std::int64_t uncountedRecords;
};
SpacingWords spacingWords(const std::string& role) {
    if (role == "--energy") return {"--thermo-every", "row", "energy file", 1};
    return {"--traj-every", "frame", "trajectory", 0};
}

// Whether the bytes of `file` from `end` to `size` are what `rewritten` calls
// rewritten (a few rows at most: a longer tail is kept as any other cut).
bool isRewritten(const RecordFile& file, std::uint64_t end, std::uint64_t size,
                 const OutputFiles::Rewritten& rewritten) {
    constexpr std::uint64_t kMaxRewrittenBytes = 4096;
    if (!rewritten || size - end > kMaxRewrittenBytes) return false;
    std::string cut(static_cast<std::size_t>(size - end), '\0');
    const std::size_t got = file.readAt(end, std::as_writable_bytes(std::span(cut.data(), cut.size())));
    return got == cut.size() && rewritten(cut);
}

std::string describe(const OutputPosition& p) {
    if (p.records == 0) return fmt::format("{} bytes, no records", p.bytes);
    return fmt::format("{} bytes, {} record(s), the last at step {}", p.bytes, p.records, p.lastStep);
}

}  // namespace

std::uint64_t tailChecksum(const RecordFile& file, std::uint64_t end, std::uint64_t tailBytes) {
    HALOEX_ASSERT(tailBytes <= end && tailBytes <= kOutputTailBytes, "tail checksum beyond the recorded end");
    std::vector<std::byte> tail(static_cast<std::size_t>(tailBytes));
    const std::size_t got = file.readAt(end - tailBytes, tail);
    Fnv1a sum;
    sum.add(std::span(tail).first(got));
    // A file shorter than `end` cannot match: mix in how much was missing.
    if (got != tail.size()) sum.add(std::as_bytes(std::span(&got, 1)));
    return sum.value();
}

OutputFiles::OutputFiles(Start start) : start_(std::move(start)) {}

const OutputPosition* OutputFiles::recorded(const std::string& role) const {
    const auto rec = std::find_if(start_.recorded.begin(), start_.recorded.end(),
                                  [&](const OutputPosition& p) { return p.role == role; });
    return rec == start_.recorded.end() ? nullptr : &*rec;
}

void OutputFiles::open(const std::string& role, const std::string& path, const LastRecordStep& lastRecordStep,
                       std::int64_t dueStep, std::int64_t every, const Rewritten& rewritten) {
    HALOEX_ASSERT(std::none_of(outputs_.begin(), outputs_.end(), [&](const Output& o) { return o.role == role; }),
                  "an output opened twice");
    if (start_.checkpointPath.empty()) return openNew(role, path, every);
    openRecords(role, path, lastRecordStep, dueStep, every, rewritten, true);
}

std::optional<std::string> OutputFiles::refusal(const std::string& role, const std::string& path,
                                                const LastRecordStep& lastRecordStep, std::int64_t dueStep,
                                                std::int64_t every) {
    if (start_.checkpointPath.empty()) return std::nullopt;
    try {
        openRecords(role, path, lastRecordStep, dueStep, every, nullptr, false);
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::InvalidInput) throw;
        return e.what();
    }
    return std::nullopt;
}

bool OutputFiles::isRecordedFile(const OutputPosition& rec, const std::string& path, const RecordFile* file,
                                 std::uint64_t size) {
    if (file != nullptr && rec.bytes > 0 && size >= rec.bytes &&
        tailChecksum(*file, rec.bytes, rec.tailBytes) == rec.tailChecksum) {
        return true;  // what it recorded, wherever the file is now
    }
    return rec.bytes == 0 && sameFile(path, rec.path);  // recorded empty: by its place
}

void OutputFiles::requireSpacing(const OutputPosition& rec, const std::string& role, const std::string& path,
                                 std::int64_t every) const {
    if (every <= 0 || rec.every <= 0 || every == rec.every || rec.lastStep < 0) return;
    const SpacingWords words = spacingWords(role);
    throwError(ErrorKind::InvalidInput,
               fmt::format("{} {} but checkpoint {} continues {} {} with a {} every {} steps ({} {}s so far): one {} "
                           "keeps one spacing. Leave {} out to keep {}, or give {} a new file name to start one "
                           "with {}s every {} steps",
                           words.option, every, start_.checkpointPath, role, path, words.record, rec.every,
                           rec.records - words.uncountedRecords, words.record, words.file, words.option, rec.every,
                           role, words.record, every));
}

void OutputFiles::openRecords(const std::string& role, const std::string& path, const LastRecordStep& lastRecordStep,
                              std::int64_t dueStep, std::int64_t every, const Rewritten& rewritten, bool apply) {
    Output out;
    out.role = role;
    out.absolutePath = absolutePath(path);
    out.every = every;
    struct stat st {};
    const bool exists = ::lstat(path.c_str(), &st) == 0;
    // Opened without changing it (a directory, device, FIFO or link is refused
    // here); a missing file is created only once it is known to be new.
    if (exists) out.file = std::make_unique<RecordFile>(path, role, RecordFile::Mode::Append);
    const std::uint64_t size = exists ? out.file->size() : 0;
    const std::string& cpt = start_.checkpointPath;
    const auto create = [&] {
        if (!out.file) out.file = std::make_unique<RecordFile>(path, role, RecordFile::Mode::Append);
    };
    if (!start_.outputsRecorded) {
        openLegacy(out, path, size, lastRecordStep, dueStep);
        if (!apply) return;
        create();
        outputs_.push_back(std::move(out));
        return;
    }
    const OutputPosition* rec = recorded(role);
    if (rec != nullptr && isRecordedFile(*rec, path, out.file.get(), size)) {
        // The one rule (isRecordedFile) that finds the output also checks it:
        // a directory moved as a whole used to skip the spacing check.
        requireSpacing(*rec, role, path, every);
        if (!apply) return;
        create();
        if (size > rec->bytes && isRewritten(*out.file, rec->bytes, size, rewritten)) {
            out.file->truncate(rec->bytes);
        } else if (size > rec->bytes) {
            // Kept before it is cut: from an older checkpoint that may be
            // much (a restart used to cut it without a trace).
            const std::string kept = backUpTail(*out.file, rec->bytes, path, role);
            out.file->truncate(rec->bytes);
            notes_.push_back(fmt::format("{} {}: cut back from {} to {} bytes, where checkpoint {} recorded it (step "
                                         "{}); what was written after the checkpoint is written again, and the {} "
                                         "bytes cut are kept in {}",
                                         role, path, size, rec->bytes, cpt, start_.step, size - rec->bytes, kept));
        }
        out.records = rec->records;
        out.lastStep = rec->lastStep;
        outputs_.push_back(std::move(out));
        return;
    }
    const bool samePlace = rec != nullptr && sameFile(path, rec->path);
    if (size == 0 && !samePlace) {
        // A new output from the checkpoint's step on.
        if (!apply) return;
        create();
        outputs_.push_back(std::move(out));
        return;
    }
    const std::string startNew =
        fmt::format("or give {} a new file name to start a new one at step {}", role, start_.step);
    if (samePlace) {
        if (size < rec->bytes) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("{} {}: the file {}, but checkpoint {} recorded it with {}: it was {} after the "
                                   "checkpoint, and continuing it would leave a gap. Restore it, {}",
                                   role, path, fmt::format("has {} bytes{}", size, exists ? "" : " (it is missing)"),
                                   cpt, describe(*rec), exists ? "cut or replaced" : "removed or moved", startNew));
        }
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{} {}: its last bytes before byte {} differ from those checkpoint {} recorded ({}): "
                               "the file was edited or replaced after the checkpoint. Restore it, {}",
                               role, path, rec->bytes, cpt, describe(*rec), startNew));
    }
    if (rec != nullptr) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{} {} ({} bytes) is not the file checkpoint {} continues ({}: {}); appending would "
                               "mix two runs' records. Give {} {} to continue it, or a new file name (or an empty "
                               "file) to start a new one at step {}",
                               role, path, size, cpt, rec->path, describe(*rec), role, rec->path, start_.step));
    }
    throwError(ErrorKind::InvalidInput,
               fmt::format("{} {} holds {} bytes, and checkpoint {} records no {} output (the run that wrote it had "
                           "none); appending would mix two runs' records. Give a new file name, or remove {}",
                           role, path, size, cpt, role, path));
}

void OutputFiles::openNew(const std::string& role, const std::string& path, std::int64_t every) {
    HALOEX_ASSERT(std::none_of(outputs_.begin(), outputs_.end(), [&](const Output& o) { return o.role == role; }),
                  "an output opened twice");
    backUp(role, path);
    Output out;
    out.role = role;
    out.absolutePath = absolutePath(path);
    out.every = every;
    out.file = std::make_unique<RecordFile>(path, role, RecordFile::Mode::Truncate);
    out.created = true;
    outputs_.push_back(std::move(out));
}

void OutputFiles::removeEmptyCreatedFiles() noexcept {
    for (Output& o : outputs_) {
        if (!o.created || !o.file) continue;
        try {
            // Only while the name still names this (empty) file.
            struct stat named {};
            const bool ours = ::lstat(o.absolutePath.c_str(), &named) == 0 && o.file->size() == 0 &&
                              o.file->isFile(named.st_dev, named.st_ino);
            o.file.reset();
            if (ours) ::unlink(o.absolutePath.c_str());
        } catch (...) {
            // Best effort, during the unwinding of the failure itself.
        }
    }
}

void OutputFiles::backUp(const std::string& role, const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) return;
    // Its lock first: a file another run is writing is refused, not moved away.
    { const RecordFile probe(path, role, RecordFile::Mode::Append); }
    if (const auto backup = backUpExistingFile(path, role)) {
        notes_.push_back(fmt::format("Backed up {} to {}", path, *backup));
    }
}

void OutputFiles::openH5md(const std::string& role, const std::string& path, std::int64_t atoms, std::int64_t dueStep,
                           std::int64_t every) {
    HALOEX_ASSERT(std::none_of(outputs_.begin(), outputs_.end(), [&](const Output& o) { return o.role == role; }),
                  "an output opened twice");
    openFrames(role, path, atoms, dueStep, every, true);
}

std::optional<std::string> OutputFiles::refusalH5md(const std::string& role, const std::string& path,
                                                    std::int64_t atoms, std::int64_t dueStep, std::int64_t every) {
    if (start_.checkpointPath.empty()) return std::nullopt;
    try {
        openFrames(role, path, atoms, dueStep, every, false);
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::InvalidInput) throw;
        return e.what();
    }
    return std::nullopt;
}

void OutputFiles::openFrames(const std::string& role, const std::string& path, std::int64_t atoms, std::int64_t dueStep,
                             std::int64_t every, bool apply) {
    Output out;
    out.role = role;
    out.absolutePath = absolutePath(path);
    out.every = every;
    const auto create = [&] {
        if (!apply) return;
        // An older trajectory is kept (a fresh run's, or a restart's new file
        // that is not empty is refused below before it gets here).
        backUp(role, path);
        out.frames = std::make_unique<H5mdTrajectory>(path, role, H5mdTrajectory::Mode::Create, atoms);
        outputs_.push_back(std::move(out));
    };
    // RecordFile's checks first: a directory, device, FIFO or link is refused
    // before HDF5 opens or replaces anything.
    struct stat st {};
    const bool exists = ::lstat(path.c_str(), &st) == 0;
    const std::uint64_t size = exists ? RecordFile(path, role, RecordFile::Mode::Append).size() : 0;
    const OutputPosition* rec = start_.checkpointPath.empty() ? nullptr : recorded(role);
    if (start_.checkpointPath.empty() || size == 0) {
        // A fresh run, or a new or empty file: a new trajectory (a file the
        // checkpoint recorded with frames is refused below).
        if (rec == nullptr || rec->records == 0 || !sameFile(path, rec->path)) return create();
    }
    const std::string& cpt = start_.checkpointPath;
    const std::string startNew =
        fmt::format("or give {} a new file name to start a new trajectory at step {}", role, start_.step);
    if (size == 0) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{} {}: the file is {}, but checkpoint {} recorded it with {} frame(s), the last at "
                               "step {}: continuing it would leave a gap. Restore it, {}",
                               role, path, exists ? "empty" : "missing", cpt, rec->records, rec->lastStep, startNew));
    }
    out.frames = std::make_unique<H5mdTrajectory>(path, role, H5mdTrajectory::Mode::Append, atoms);
    H5mdTrajectory& traj = *out.frames;
    if (!start_.outputsRecorded) {
        // Format 1 recorded nothing: continued only when it ends with the frame due last.
        const std::int64_t last = traj.frames() > 0 ? traj.stepOf(traj.frames() - 1) : -1;
        if (traj.frames() > 0 && last != dueStep) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("{} {}: checkpoint {} has format 1, which did not record where the file stood, "
                                   "and the file's last frame is at step {} rather than at step {} (the last one due "
                                   "at or before the checkpoint's step {}). Give {} a new file name",
                                   role, path, cpt, last, dueStep, start_.step, role));
        }
        if (!apply) return;
        out.records = traj.frames();
        out.lastStep = last;
        outputs_.push_back(std::move(out));
        return;
    }
    const bool samePlace = rec != nullptr && sameFile(path, rec->path);
    if (rec != nullptr && isRecordedTrajectory(*rec, traj, samePlace)) {
        // Found and checked by one rule: a moved directory used to skip the spacing check.
        requireSpacing(*rec, role, path, every);
        if (!apply) return;
        const std::int64_t found = traj.frames();
        std::string kept;
        if (found > rec->records) {
            // Kept before it is cut, as the text outputs' tails are: an older
            // checkpoint may cut much. HDF5 frames are not a byte range, so
            // the whole file is copied, closed first so its bytes are whole.
            out.frames.reset();
            kept = backUpTail(RecordFile(path, role, RecordFile::Mode::Append), 0, path, role);
            out.frames = std::make_unique<H5mdTrajectory>(path, role, H5mdTrajectory::Mode::Append, atoms);
        }
        out.frames->truncateFrames(rec->records);  // also evens out series a killed run left uneven
        if (found > rec->records) {
            notes_.push_back(fmt::format("{} {}: cut back from {} to {} frames, where checkpoint {} recorded it "
                                         "(step {}); the frames after the checkpoint are written again, and the "
                                         "file as it was before the cut is kept in {}",
                                         role, path, found, rec->records, cpt, start_.step, kept));
        }
        out.records = rec->records;
        out.lastStep = rec->lastStep;
        outputs_.push_back(std::move(out));
        return;
    }
    const std::string holds = traj.frames() == 0 ? std::string("no frames")
                                                 : fmt::format("{} frame(s), the last at step {}", traj.frames(),
                                                               traj.stepOf(traj.frames() - 1));
    if (samePlace) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{} {} holds {}, but checkpoint {} recorded it with {} frame(s), the last at step {} "
                               "and other positions: the file was cut, edited or replaced after the checkpoint. "
                               "Restore it, {}",
                               role, path, holds, cpt, rec->records, rec->lastStep, startNew));
    }
    if (rec != nullptr) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{} {} ({}) is not the trajectory checkpoint {} continues ({}: {} frame(s)); "
                               "appending would mix two runs' frames. Give {} {} to continue it, or a new file name "
                               "to start a new one at step {}",
                               role, path, holds, cpt, rec->path, rec->records, role, rec->path, start_.step));
    }
    throwError(ErrorKind::InvalidInput,
               fmt::format("{} {} holds {}, and checkpoint {} records no {} output (the run that wrote it had none); "
                           "appending would mix two runs' frames. Give a new file name, or remove {}",
                           role, path, holds, cpt, role, path));
}

bool OutputFiles::isRecordedTrajectory(const OutputPosition& rec, const H5mdTrajectory& traj, bool samePlace) {
    // Its frames: at least as many, the same step at the last recorded one,
    // the same last position values (wherever the file is now).
    const bool framesMatch = traj.frames() >= rec.records &&
                             (rec.records == 0 || traj.stepOf(rec.records - 1) == rec.lastStep) &&
                             traj.positionTailChecksum(rec.bytes, rec.tailBytes) == rec.tailChecksum;
    // Recorded without frames, only its place tells it.
    return framesMatch && (rec.records > 0 || samePlace);
}

void OutputFiles::openLegacy(Output& out, const std::string& path, std::uint64_t size,
                             const LastRecordStep& lastRecordStep, std::int64_t dueStep) {
    if (size == 0) return;  // a new or empty file (the caller creates it)
    const std::optional<std::int64_t> last = lastRecordStep ? lastRecordStep(path) : std::nullopt;
    if (last && *last == dueStep) {
        out.lastStep = *last;
        return;
    }
    out.file.reset();
    throwError(ErrorKind::InvalidInput,
               fmt::format("{} {}: checkpoint {} has format 1, which did not record where the file stood, and the "
                           "file's last record is {} rather than at step {} (the last one due at or before the "
                           "checkpoint's step {}): appending would write records twice or leave a gap. Remove the "
                           "records after step {} (for a trajectory: gmx trjconv -e), or give {} a new file name",
                           out.role, path, start_.checkpointPath,
                           last ? fmt::format("at step {}", *last) : std::string("not readable"), dueStep, start_.step,
                           start_.step, out.role));
}

OutputFiles::Output& OutputFiles::find(const std::string& role) {
    const auto it = std::find_if(outputs_.begin(), outputs_.end(), [&](const Output& o) { return o.role == role; });
    HALOEX_ASSERT(it != outputs_.end(), "an output used before it was opened");
    return *it;
}

const OutputFiles::Output& OutputFiles::find(const std::string& role) const {
    return const_cast<OutputFiles*>(this)->find(role);
}

void OutputFiles::append(const std::string& role, std::string_view record, std::int64_t step) {
    Output& out = find(role);
    HALOEX_ASSERT(out.file != nullptr, "a record appended to an H5MD output");
    out.file->append(record);
    ++out.records;
    out.lastStep = step;
}

void OutputFiles::appendFrame(const std::string& role, std::int64_t step, double time, const std::array<double, 3>& box,
                              std::span<const Vec3d> positions) {
    Output& out = find(role);
    HALOEX_ASSERT(out.frames != nullptr, "a frame appended to an output that is not H5MD");
    out.frames->append(step, time, box, positions);
    ++out.records;
    out.lastStep = step;
}

std::int64_t OutputFiles::records(const std::string& role) const { return find(role).records; }

std::vector<OutputPosition> OutputFiles::positions() const {
    std::vector<OutputPosition> all;
    for (const Output& o : outputs_) {
        OutputPosition p;
        p.role = o.role;
        p.path = o.absolutePath;
        p.bytes = o.file ? o.file->size() : 0;
        p.records = o.records;
        p.lastStep = o.lastStep;
        p.every = o.every;
        if (o.frames) {
            p.bytes = o.frames->positionBytes();
            p.tailBytes = std::min(p.bytes, kOutputTailBytes);
            p.tailChecksum = o.frames->positionTailChecksum(p.bytes, p.tailBytes);
            all.push_back(std::move(p));
            continue;
        }
        p.tailBytes = std::min(p.bytes, kOutputTailBytes);
        p.tailChecksum = tailChecksum(*o.file, p.bytes, p.tailBytes);
        all.push_back(std::move(p));
    }
    return all;
}

}  // namespace haloex::md
