#pragma once
// The outputs a run continues across restarts, all written through this one
// layer: the trajectory (--traj) now; the log and energy files of the
// mdrun-conventions work are to be opened here the same way. Each output is a
// RecordFile (haloex/detail/core/safe_file.hpp: whole records, one write each). The
// layer knows how long each file is, how many records it holds and the step
// of the last one, and hands that to every checkpoint
// (CheckpointData::outputs), so that a restart continues each output exactly
// where the checkpoint stood:
//
//  * the file the checkpoint recorded (found by its contents: at least as
//    long, and the last bytes before the recorded end unchanged; a file
//    recorded empty by its place), its spacing checked: cut back to
//    the recorded end -- records written after the checkpoint, before the run
//    was stopped or killed, are written again by the restart; the bytes cut
//    are kept first in #NAME.cut.N# (backUpTail) -- and appended to;
//  * a new or empty file: started;
//  * (a fresh run) an existing file: backed up as #NAME.N# (openNew), then started;
//  * anything else (the recorded file shorter or edited, another run's file,
//    a non-empty file the checkpoint does not know): refused before step 0,
//    naming the file, what the checkpoint recorded and what to do.
//
// A format-1 checkpoint recorded no positions: a non-empty file is continued
// only when its last record is the one due at the checkpoint's step.
//
// An H5MD trajectory (openH5md, h5md_trajectory.hpp) is rewritten in place by
// HDF5, so its bytes say nothing; its position records the frames instead:
// `records` frames, the last at `lastStep`, `bytes` the bytes of their
// float32 positions and the tail checksum over the last (up to 1 MiB) of
// those values. The recorded file has at least that many frames, the same
// step at the last and the same values; it is cut back to the recorded frames
// (H5Dset_extent) and appended to. Anything else is refused as above.
//
// Every output is locked while it is open (RecordFile, H5mdTrajectory:
// lockForWriting), before anything in it is cut or moved: a second run with
// the same output names is refused, naming the first run's PID.
//
// Rank 0 only; errors are haloex::Error (InvalidInput for a refusal, Io).
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "haloex/detail/core/safe_file.hpp"
#include "haloex/core/vec3.hpp"
#include "haloex/md/checkpoint.hpp"
#include "haloex/md/h5md_trajectory.hpp"

namespace haloex::md {

class OutputFiles {
public:
    // Where the run starts: fresh, or from a checkpoint and what it recorded.
    struct Start {
        std::string checkpointPath;            // empty: a fresh run (every output starts empty)
        std::int64_t step = 0;                 // the checkpoint's step
        bool outputsRecorded = true;           // false: a format-1 checkpoint
        std::vector<OutputPosition> recorded;  // the checkpoint's outputs
    };
    // For a format-1 checkpoint: the step of a file's last record, if it can be told.
    using LastRecordStep = std::function<std::optional<std::int64_t>(const std::string& path)>;
    // Whether the bytes after the recorded end are only what the run writes
    // after its final checkpoint and a restart writes again where it is due
    // (the energy row of the checkpoint's own step): cut without a
    // #NAME.cut.N# copy or a note, which every resubmission would add.
    using Rewritten = std::function<bool(std::string_view cut)>;

    explicit OutputFiles(Start start);

    // Opens the output `role` ("--traj") at `path` as described above.
    // `lastRecordStep` and `dueStep` (the step of the last record due at or
    // before the checkpoint's step; -1: none) serve format-1 checkpoints only.
    // `every`: the steps between its records, recorded for the restart (0: none).
    // `rewritten` (may be empty): see Rewritten.
    void open(const std::string& role, const std::string& path, const LastRecordStep& lastRecordStep,
              std::int64_t dueStep, std::int64_t every = 0, const Rewritten& rewritten = nullptr);
    // Opens the output `role` at `path` as a new, empty file, whatever the
    // start (a fresh run's outputs, a restart's log the checkpoint did not
    // record): an existing non-empty file is backed up first (#NAME.N#, as
    // mdrun), after its lock showed that no other run is writing it.
    void openNew(const std::string& role, const std::string& path, std::int64_t every = 0);
    // Backs an existing non-empty file at `path` up as openNew does, for the
    // outputs a fresh run replaces whole (--json, --cpt): refused, naming the
    // other run, when another process holds the file locked.
    void backUp(const std::string& role, const std::string& path);
    // Opens the trajectory `role` at `path` as an H5MD file of `atoms` atoms
    // (above); `dueStep` as for open().
    void openH5md(const std::string& role, const std::string& path, std::int64_t atoms, std::int64_t dueStep,
                  std::int64_t every = 0);
    // Why open() / openH5md() with these arguments would refuse the file,
    // found without changing, creating or keeping anything; nullopt when it
    // would not (or for a fresh run). So that a restart checks every output
    // before it cuts any, and names all that it refuses at once.
    std::optional<std::string> refusal(const std::string& role, const std::string& path,
                                       const LastRecordStep& lastRecordStep, std::int64_t dueStep,
                                       std::int64_t every = 0);
    std::optional<std::string> refusalH5md(const std::string& role, const std::string& path, std::int64_t atoms,
                                           std::int64_t dueStep, std::int64_t every = 0);
    // Appends one whole record written at `step`.
    void append(const std::string& role, std::string_view record, std::int64_t step);
    // Appends one frame to the H5MD output `role` (flushed to the file).
    void appendFrame(const std::string& role, std::int64_t step, double time, const std::array<double, 3>& box,
                     std::span<const Vec3d> positions);

    // Every open output's position now (reads each file's last MiB for its checksum).
    std::vector<OutputPosition> positions() const;
    std::int64_t records(const std::string& role) const;
    // After a failure (a full disk): removes the files this run created
    // (openNew) that are still empty, and closes every output. An empty .xvg
    // or .log said nothing but that the run had failed.
    void removeEmptyCreatedFiles() noexcept;
    // What open() did that the user should know (a file cut back), one line each.
    const std::vector<std::string>& notes() const { return notes_; }

private:
    struct Output {
        std::string role;
        std::string absolutePath;
        std::unique_ptr<RecordFile> file;        // a file of records, or
        std::unique_ptr<H5mdTrajectory> frames;  // an H5MD trajectory
        std::int64_t records = 0;
        std::int64_t lastStep = -1;
        std::int64_t every = 0;
        bool created = false;  // made new by this run (openNew)
    };
    const OutputPosition* recorded(const std::string& role) const;  // nullptr: none
    // The one rule by which a restart knows the file it continues: the bytes
    // (for H5MD the frames) the checkpoint recorded are there, wherever the
    // file is now (a run directory moved as a whole); a file recorded empty
    // by its place. The continued file is then checked by the same rule
    // (requireSpacing): restart options once compared paths instead.
    static bool isRecordedFile(const OutputPosition& recorded, const std::string& path, const RecordFile* file,
                               std::uint64_t size);
    static bool isRecordedTrajectory(const OutputPosition& recorded, const H5mdTrajectory& trajectory, bool samePlace);
    // Refuses `every` other than the recorded spacing of a file with records
    // (one file, one spacing: analyses assume it).
    void requireSpacing(const OutputPosition& recorded, const std::string& role, const std::string& path,
                        std::int64_t every) const;
    // open() and openH5md(); with `apply` false they only refuse (refusal()).
    void openRecords(const std::string& role, const std::string& path, const LastRecordStep& lastRecordStep,
                     std::int64_t dueStep, std::int64_t every, const Rewritten& rewritten, bool apply);
    void openFrames(const std::string& role, const std::string& path, std::int64_t atoms, std::int64_t dueStep,
                    std::int64_t every, bool apply);
    Output& find(const std::string& role);
    const Output& find(const std::string& role) const;
    void openLegacy(Output& out, const std::string& path, std::uint64_t size, const LastRecordStep& lastRecordStep,
                    std::int64_t dueStep);

    Start start_;
    std::vector<Output> outputs_;
    std::vector<std::string> notes_;
};

// FNV-1a-64 of the `tailBytes` bytes of `file` before byte `end`.
std::uint64_t tailChecksum(const RecordFile& file, std::uint64_t end, std::uint64_t tailBytes);

}  // namespace haloex::md
