#include "haloex/md/run_output.hpp"

#include <sys/stat.h>

#include "haloex/md/energy_file.hpp"
#include "haloex/md/log_file.hpp"

#include "haloex/md/home_atoms.hpp"

#include <algorithm>
#include <array>
#include <exception>
#include <charconv>
#include <fstream>
#include <optional>
#include <string_view>
#include <filesystem>
#include <fmt/format.h>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/detail/core/safe_file.hpp"
#include "haloex/md/h5md_trajectory.hpp"
#include "haloex/md/output_files.hpp"

namespace haloex::md {
namespace {

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

constexpr const char* kTrajectory = "--traj";
constexpr const char* kEnergy = "--energy";
constexpr const char* kLog = "--log";

std::int64_t nextMultipleAfter(std::int64_t step, std::int64_t every) { return (step / every + 1) * every; }

// The step in the title of the last frame of a haloex-md trajectory of
// `atoms` atoms ("haloex-md t= <ps> step= <step>"), read from the file's end
// (a frame is a title, a count, one line per atom and the box); nullopt when
// the file does not end that way. For format-1 checkpoints only.
std::optional<std::int64_t> lastFrameStep(const std::string& path, std::int64_t atoms) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) return std::nullopt;
    const auto size = static_cast<std::uint64_t>(in.tellg());
    const std::uint64_t chunk = std::min<std::uint64_t>(size, static_cast<std::uint64_t>(atoms) * 128 + 16384);
    std::string tail(static_cast<std::size_t>(chunk), '\0');
    in.seekg(static_cast<std::streamoff>(size - chunk));
    in.read(tail.data(), static_cast<std::streamsize>(chunk));
    if (!in || tail.empty() || tail.back() != '\n') return std::nullopt;
    std::vector<std::string_view> lines;
    std::size_t begin = 0;
    for (std::size_t i = 0; i < tail.size(); ++i) {
        if (tail[i] != '\n') continue;
        lines.emplace_back(tail.data() + begin, i - begin);
        begin = i + 1;
    }
    if (chunk < size && !lines.empty()) lines.erase(lines.begin());  // the first may be partial
    const auto frameLines = static_cast<std::uint64_t>(atoms) + 3;
    if (lines.size() < frameLines) return std::nullopt;
    const std::string_view title = lines[lines.size() - frameLines];
    const std::size_t at = title.rfind("step= ");
    if (!title.starts_with("haloex-md t= ") || at == std::string_view::npos) return std::nullopt;
    std::int64_t step = -1;
    const char* first = title.data() + at + 6;
    const auto [end, ec] = std::from_chars(first, title.data() + title.size(), step);
    if (ec != std::errc() || end != title.data() + title.size()) return std::nullopt;
    return step;
}

// Opens an existing output only to see whether another process holds its
// lock (RecordFile refuses it then, naming the process), and closes it again
// before the output is opened for good: closing a second descriptor of a
// file would drop this process's lock on it.
void requireNoOtherWriter(const char* role, const std::string& path) {
    struct stat st {};
    if (path.empty() || ::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
    const RecordFile probe(path, role, RecordFile::Mode::Append);
}

void requireDirectoryOf(const char* option, const std::string& path) {
    if (path.empty()) return;
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
        throwError(ErrorKind::Io, fmt::format("{} {}: the directory '{}' does not exist; create it first", option, path,
                                              parent.string()));
    }
}

// The refusals of a restart's outputs (OutputFiles::refusal), as one error:
// one alone as it is, several listed, so a user restores them all at once;
// and which outputs the restart took from its checkpoint, since the user did
// not name them (output_names.hpp).
void requireNoneRefused(const std::vector<std::string>& refused, const MdOptions& o, std::int64_t step) {
    if (refused.empty()) return;
    std::string continued;
    for (const std::string& output : o.continuedOutputs) continued += (continued.empty() ? "" : ", ") + output;
    const std::string context =
        continued.empty() ? std::string()
                          : fmt::format("--restart {} continues the outputs it recorded ({}), as no other names were "
                                        "given; ",
                                        o.restartFile, continued);
    if (refused.size() == 1) throwError(ErrorKind::InvalidInput, context + refused.front());
    std::string list;
    for (const std::string& why : refused) list += "\n  " + why;
    throwError(ErrorKind::InvalidInput,
               fmt::format("{}{} outputs cannot be continued from step {} (checkpoint {}):{}\nNothing was changed. "
                           "Restore them, or name other files (--traj FILE, --energy FILE, --log FILE, or --log "
                           "none), which start at step {}",
                           context, refused.size(), step, o.restartFile, list, step));
}

}  // namespace

System systemFromAtoms(const plan::Box& box, std::span<const AtomRecord> atoms) {
    System s;
    s.box = box;
    s.positions.reserve(atoms.size());
    s.velocities.reserve(atoms.size());
    s.types.reserve(atoms.size());
    s.globalIds.reserve(atoms.size());
    for (const AtomRecord& a : atoms) {
        s.positions.push_back(a.position);
        s.velocities.push_back(a.velocity);
        s.types.push_back(a.type);
        s.globalIds.push_back(a.globalId);
    }
    return s;
}

void runOnRoot(runtime::World& world, const std::function<void()>& task) {
    std::array<std::int64_t, 2> failure{-1, 0};  // error kind (-1: none), message length
    std::string message;
    if (world.rank() == 0) {
        try {
            task();
        } catch (const Error& e) {
            failure[0] = static_cast<std::int64_t>(e.kind());
            message = e.what();
        } catch (const std::exception& e) {
            failure[0] = static_cast<std::int64_t>(ErrorKind::Internal);
            message = e.what();
        }
        failure[1] = static_cast<std::int64_t>(message.size());
    }
    world.broadcastBytes(std::as_writable_bytes(std::span(failure)), 0);
    if (failure[0] < 0) return;
    message.resize(static_cast<std::size_t>(failure[1]));
    if (!message.empty()) world.broadcastBytes(std::as_writable_bytes(std::span(message.data(), message.size())), 0);
    throwError(static_cast<ErrorKind>(failure[0]), world.rank() == 0 ? message : "rank 0: " + message);
}

RunOutput::RunOutput(MdOptions resolved, std::int64_t firstStep)
    : options_(std::move(resolved)), firstStep_(firstStep), restarted_(!options_.restartFile.empty()) {
    if (!options_.trajFile.empty() && options_.trajEvery <= 0) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--traj {}: --traj-every {} must be positive", options_.trajFile, options_.trajEvery));
    }
    // Found now rather than after hours of steps.
    requireDirectoryOf("--cpt", options_.checkpointFile);
    requireDirectoryOf("--traj", options_.trajFile);
    requireDirectoryOf(kEnergy, options_.energyFile);
    if (logEnabled(options_)) requireDirectoryOf(kLog, options_.logFile);
    if (options_.checkpointEvery < 0) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--cpt-every {} cannot be negative (0: only at the end)", options_.checkpointEvery));
    }
}

RunOutput::~RunOutput() {
    // Destroyed by a failure (a full disk at the first write): no empty file
    // this run created is left behind.
    if (files_ && std::uncaught_exceptions() > 0) files_->removeEmptyCreatedFiles();
}

void RunOutput::open(runtime::World& world, const CheckpointData* checkpoint, std::int64_t atoms) {
    runOnRoot(world, [&] {
        // Refused before anything is cut, moved or created when another run
        // writes one of these outputs (each is checked again, and locked, as
        // it is opened below).
        requireNoOtherWriter(kTrajectory, options_.trajFile);
        if (logEnabled(options_)) requireNoOtherWriter(kLog, options_.logFile);
        requireNoOtherWriter(kEnergy, options_.energyFile);
        if (!options_.checkpointFile.empty()) {
            if (const auto note = separateHardLinkedPreviousCheckpoint(options_.checkpointFile);
                note && !options_.quiet) {
                fmt::print("{}\n", *note);
            }
        }
        OutputFiles::Start start;
        if (checkpoint != nullptr) {
            start.checkpointPath = options_.restartFile;
            start.step = checkpoint->step;
            start.outputsRecorded = checkpoint->outputsRecorded;
            start.recorded = checkpoint->outputs;
            for (OutputPosition& p : start.recorded) {
                // The energy rows' spacing: the checkpoint's --thermo-every (format 3 kept it there).
                if (p.role == kEnergy && p.every == 0) p.every = checkpoint->thermoEvery;
            }
        }
        files_ = std::make_unique<OutputFiles>(std::move(start));
        // Format 1: the frame due last is the one at the greatest multiple
        // of traj-every up to the checkpoint's step.
        const std::int64_t due =
            checkpoint && !options_.trajFile.empty() ? checkpoint->step / options_.trajEvery * options_.trajEvery : -1;
        const auto lastFrame = [atoms](const std::string& path) { return lastFrameStep(path, atoms); };
        // The log is continued where the checkpoint recorded it; otherwise a
        // new log, an existing one backed up first (as mdrun's #md.log.1#).
        const bool logRecorded = checkpoint != nullptr && checkpoint->outputsRecorded &&
                                 std::any_of(checkpoint->outputs.begin(), checkpoint->outputs.end(),
                                             [](const OutputPosition& p) { return p.role == kLog; });
        if (checkpoint != nullptr) {
            // Every output the restart continues is checked before any is cut
            // or created, and all it refuses are named at once.
            std::vector<std::string> refused;
            const auto check = [&](std::optional<std::string> why) {
                if (why) refused.push_back(std::move(*why));
            };
            if (!options_.trajFile.empty()) {
                check(isH5mdPath(options_.trajFile)
                          ? files_->refusalH5md(kTrajectory, options_.trajFile, atoms, due, options_.trajEvery)
                          : files_->refusal(kTrajectory, options_.trajFile, lastFrame, due, options_.trajEvery));
            }
            if (logEnabled(options_) && logRecorded) check(files_->refusal(kLog, options_.logFile, nullptr, -1));
            if (!options_.energyFile.empty()) {
                check(files_->refusal(kEnergy, options_.energyFile, nullptr, -1, options_.thermoEvery));
            }
            requireNoneRefused(refused, options_, checkpoint->step);
        }
        if (!options_.trajFile.empty()) {
            if (isH5mdPath(options_.trajFile)) {
                files_->openH5md(kTrajectory, options_.trajFile, atoms, due, options_.trajEvery);
            } else {
                files_->open(kTrajectory, options_.trajFile, lastFrame, due, options_.trajEvery);
            }
        }
        if (logEnabled(options_)) {
            if (logRecorded) {
                files_->open(kLog, options_.logFile, nullptr, -1);
            } else {
                files_->openNew(kLog, options_.logFile);
            }
        }
        if (!options_.energyFile.empty()) {
            // Format 1 never recorded an energy file: only a new or empty one
            // continues. The row of the checkpoint's own step came after the
            // checkpoint (RunOutput's owner writes it last): cut and, where it
            // is an energy step, written again.
            const OutputFiles::Rewritten endRow =
                checkpoint == nullptr ? OutputFiles::Rewritten()
                                      : [time = static_cast<double>(checkpoint->step) * options_.dt](
                                            std::string_view cut) { return isEnergyXvgRowAt(cut, time); };
            files_->open(kEnergy, options_.energyFile, nullptr, -1, options_.thermoEvery, endRow);
            if (files_->records(kEnergy) == 0) {
                // The system's count: options_.atoms is 0 for a --gro start.
                files_->append(kEnergy, energyXvgHeader(atoms, options_.dt, options_.thermoEvery), -1);
            }
        }
        if (checkpoint == nullptr) {
            // A fresh run keeps what an earlier run left under the names it
            // replaces whole (the continuing outputs were backed up as they
            // were opened, above), as mdrun backs up every output.
            if (!options_.jsonFile.empty()) files_->backUp("--json", options_.jsonFile);
            if (!options_.checkpointFile.empty()) {
                files_->backUp("--cpt", options_.checkpointFile);
                files_->backUp("--cpt (its previous copy)", previousCheckpointPath(options_.checkpointFile));
            }
        }
        if (!options_.quiet) {
            for (const std::string& note : files_->notes()) fmt::print("{}\n", note);
        }
    });
}

void RunOutput::appendLog(runtime::World& world, const std::string& text, std::int64_t step) {
    if (!logEnabled(options_)) return;
    runOnRoot(world, [&] {
        HALOEX_ASSERT(files_ != nullptr, "RunOutput::appendLog before open");
        files_->append(kLog, text, step);
    });
}

void RunOutput::appendEnergies(runtime::World& world, const EnergySample& sample) {
    if (options_.energyFile.empty()) return;
    runOnRoot(world, [&] {
        HALOEX_ASSERT(files_ != nullptr, "RunOutput::appendEnergies before open");
        files_->append(kEnergy, energyXvgRow(sample), sample.step);
    });
}

std::int64_t RunOutput::framesWritten() const {
    return files_ && !options_.trajFile.empty() ? files_->records(kTrajectory) : 0;
}

bool RunOutput::trajectoryDue(std::int64_t step) const {
    if (options_.trajFile.empty() || (restarted_ && step == firstStep_) || step == lastFrameStep_) return false;
    return step % options_.trajEvery == 0;
}

const std::string& RunOutput::checkpointPath(Boundary boundary) const {
    static const std::string none;
    if (!options_.checkpointFile.empty()) return options_.checkpointFile;
    return boundary == Boundary::Stop ? options_.stopCheckpointFile : none;
}

bool RunOutput::checkpointDue(std::int64_t step, Boundary boundary) const {
    // The start needs no checkpoint: the input (or the restart file) is one.
    if (checkpointPath(boundary).empty() || step == firstStep_ || step == lastCheckpointStep_) return false;
    return boundary != Boundary::Step || (options_.checkpointEvery > 0 && step % options_.checkpointEvery == 0);
}

std::int64_t RunOutput::nextOutputStep(std::int64_t step) const {
    std::int64_t next = kNever;
    if (!options_.trajFile.empty()) next = std::min(next, nextMultipleAfter(step, options_.trajEvery));
    if (!options_.checkpointFile.empty() && options_.checkpointEvery > 0) {
        next = std::min(next, nextMultipleAfter(step, options_.checkpointEvery));
    }
    return next;
}

bool RunOutput::isOutputStep(std::int64_t step, Boundary boundary) const {
    return trajectoryDue(step) || checkpointDue(step, boundary);
}

CheckpointData RunOutput::checkpoint(const plan::Box& box, std::span<const AtomRecord> atoms,
                                     const RunState& state) const {
    CheckpointData c;
    c.step = state.step;
    c.time = static_cast<double>(state.step) * options_.dt;
    c.rc = options_.rc;
    c.rlist = options_.rlist;
    c.nstlist = options_.nstlist;
    c.dt = options_.dt;
    c.seed = options_.seed;
    c.temperature = options_.temperature;
    c.thermostat = options_.thermostat;
    c.tauT = options_.tauT;
    c.thermoEvery = options_.thermoEvery;
    c.thermostatEnergy = state.thermostatEnergy;
    c.pendingVelocityScale = state.pendingVelocityScale;
    c.thermostatRandom = state.thermostatRandom;
    c.system = systemFromAtoms(box, atoms);
    c.atomCount = c.system.size();
    return c;
}

bool RunOutput::write(runtime::World& world, const plan::Box& box, std::span<const AtomRecord> home,
                      const RunState& state, Boundary boundary) {
    const bool frame = trajectoryDue(state.step);
    const bool checkpointNow = checkpointDue(state.step, boundary);
    if (!frame && !checkpointNow) return false;
    writeDue(world, box, home, state, frame, checkpointNow ? checkpointPath(boundary) : std::string());
    return checkpointNow;
}

void RunOutput::writeCheckpoint(runtime::World& world, const plan::Box& box, std::span<const AtomRecord> home,
                                const RunState& state) {
    if (options_.checkpointFile.empty() || state.step == lastCheckpointStep_) return;
    writeDue(world, box, home, state, false, options_.checkpointFile);
}

void RunOutput::writeDue(runtime::World& world, const plan::Box& box, std::span<const AtomRecord> home,
                         const RunState& state, bool frame, const std::string& checkpointFile) {
    if (frame) lastFrameStep_ = state.step;
    if (!checkpointFile.empty()) lastCheckpointStep_ = state.step;
    const std::vector<AtomRecord> all = gatherAtomsOnRoot(home, world);
    runOnRoot(world, [&] {
        HALOEX_ASSERT(files_ != nullptr, "RunOutput::write before open");
        if (frame) {
            const double time = static_cast<double>(state.step) * options_.dt;
            if (isH5mdPath(options_.trajFile)) {
                std::vector<Vec3d> positions;
                positions.reserve(all.size());
                for (const AtomRecord& a : all) positions.push_back(a.position);
                files_->appendFrame(kTrajectory, state.step, time, {box.length[0], box.length[1], box.length[2]},
                                    positions);
            } else {
                const std::string title = fmt::format("haloex-md t= {:.5f} step= {}", time, state.step);
                // Formatted first (a coordinate that does not fit throws before
                // anything is written), then appended whole.
                files_->append(kTrajectory, formatGro(systemFromAtoms(box, all), title, false), state.step);
            }
        }
        if (checkpointFile.empty()) return;
        if (checkpointFile != options_.checkpointFile && !restarted_) {
            // A stop's checkpoint under the default name: what an earlier run
            // left there is kept, as a fresh run keeps a --cpt it replaces.
            const std::size_t earlier = files_->notes().size();
            files_->backUp("--cpt", checkpointFile);
            files_->backUp("--cpt (its previous copy)", previousCheckpointPath(checkpointFile));
            for (std::size_t k = earlier; k < files_->notes().size() && !options_.quiet; ++k) {
                fmt::print("{}\n", files_->notes()[k]);
            }
        }
        // After the frame of this step: the checkpoint records the
        // trajectory with it.
        CheckpointData c = checkpoint(box, all, state);
        c.outputs = files_->positions();
        const std::string notKept = md::writeCheckpoint(checkpointFile, c);
        if (!notKept.empty() && !warnedPreviousNotKept_) {
            // Once per run: the same cause would repeat at every checkpoint.
            warnedPreviousNotKept_ = true;
            fmt::print(stderr, "haloex-md: warning: {}; the new checkpoint was written, and the run goes on\n",
                       notKept);
        }
    });
}

}  // namespace haloex::md
