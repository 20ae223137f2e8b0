#pragma once
// Binary checkpoints of a whole haloex-md run: the step, the settings a
// restart must keep, the thermostat's state and every atom (gathered by global
// id), so that a restart continues the trajectory exactly.
//
// Layout (native byte order, checked on reading with a marker):
//   "HALOEXCP" | u32 format version | u32 byte-order marker 0x01020304 |
//   i64 step | f64 time | f64 box[3] | f64 rc | f64 rlist | i32 nstlist |
//   i32 thermostat (0 none, 1 v-rescale) | f64 dt | u64 seed | f64 temperature |
//   f64 tau_t | f64 thermostat energy | f64 pending velocity scale |
//   u64 rng seed | u64 rng draws | f64 rng spare normal | u32 rng has spare |
//   u32 zero | i64 atom count |
//   (format 2:) u64 output-section bytes | output section |
//   per atom: i64 global id | i32 type | i32 zero | f64 x[3] | f64 v[3] |
//   u64 FNV-1a-64 checksum of every byte before it.
// Output section (format 2): u32 outputs | u32 zero | (format 3:) i64 steps
//   between energy steps (--thermo-every) | per output: u32 role
//   length | u32 path length | u64 bytes | i64 records | i64 last step |
//   u64 tail bytes | u64 tail checksum | (format 3:) i64 every | role | path |
//   zero padding to 8 bytes.
// Format 1 (no output section) is still read: its outputsRecorded is false;
// format 2 (no `every`, no energy-step spacing) too: those read as 0.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "haloex/md/random.hpp"
#include "haloex/md/system.hpp"

namespace haloex::md {

inline constexpr std::uint32_t kCheckpointFormatVersion = 3;

// Where one continuing output (md::OutputFiles: the trajectory; later the log
// and energy files) stood when the checkpoint was written, so that a restart
// continues it exactly there: no record twice, none missing.
struct OutputPosition {
    std::string role;            // which output: "--traj"
    std::string path;            // absolute, as it was opened
    std::uint64_t bytes = 0;     // the file's length at the checkpoint
    std::int64_t records = 0;    // whole records (frames, rows) in those bytes
    std::int64_t lastStep = -1;  // step of the last of them; -1: none
    // FNV-1a-64 of the last tailBytes bytes before `bytes` (at most
    // kOutputTailBytes, as mdrun keeps an MD5 of each file's last MiB): finds
    // a file edited, replaced or cut after the checkpoint.
    std::uint64_t tailBytes = 0;
    std::uint64_t tailChecksum = 0;
    // Steps between records (the trajectory's --traj-every), so that a
    // restart keeps the spacing (adoptCheckpointSettings); 0: not periodic,
    // or not recorded (format 2).
    std::int64_t every = 0;
    bool operator==(const OutputPosition&) const = default;
};
inline constexpr std::uint64_t kOutputTailBytes = std::uint64_t{1} << 20;

struct CheckpointData {
    std::int64_t step = 0;  // the next step to run
    double time = 0.0;      // ps, step * dt

    // The run's settings: a restart adopts them (and refuses to change the
    // first four).
    double rc = 0.0;     // nm
    double rlist = 0.0;  // nm
    int nstlist = 0;
    double dt = 0.0;  // ps
    std::uint64_t seed = 0;
    double temperature = 0.0;         // K
    std::string thermostat = "none";  // none | v-rescale
    double tauT = 0.0;                // ps
    // Steps between energy steps (--thermo-every: energies, thermostat
    // coupling, log and energy-file rows); 0: not recorded (formats 1-2).
    std::int64_t thermoEvery = 0;

    // Thermostat state.
    double thermostatEnergy = 0.0;      // kJ/mol taken out so far (for the conserved energy)
    double pendingVelocityScale = 1.0;  // lambda decided at the last energy step, applied in the next step
    PortableRandomState thermostatRandom;

    // The continuing outputs at this step (format 2 on; empty when the run had
    // none). outputsRecorded: false for a format-1 checkpoint, which did not
    // record them.
    std::vector<OutputPosition> outputs;
    bool outputsRecorded = true;

    // Box and atoms, sorted by global id; velocities are v(t - dt/2) (leapfrog).
    System system;
    // Atoms in the file: set by the readers (readCheckpointHeader leaves
    // `system` empty); the writer uses system.size().
    std::int64_t atomCount = 0;
};

// Writes atomically (haloex/core/safe_file.hpp): to a temporary created
// exclusively under a random name next to `path`, fsync, then into place,
// `path` being a regular file or not existing (a directory, device, FIFO or
// symbolic link is refused with InvalidInput). An existing checkpoint becomes
// the previous copy, "<path>.prev", by renames only, once the new one is
// durable (AtomicFileWriter::commitKeepingPrevious): `path` always names a
// complete checkpoint (or, for a moment on file systems without
// RENAME_EXCHANGE, only "<path>.prev" does), the two are never one file, and
// nothing is written through a link planted at either name. Returns why the
// previous copy could not be kept (empty: it was, or there was none); the new
// checkpoint is in place either way. On failure the temporary is removed,
// `path` is untouched, and Io is thrown naming the file and the reason.
// InvalidInput for data that could not be read back (unsorted or duplicate
// ids, sizes that differ, an unknown thermostat).
std::string writeCheckpoint(const std::string& path, const CheckpointData& data);
// "<path>.prev": where writeCheckpoint keeps the checkpoint it replaces.
std::string previousCheckpointPath(const std::string& path);
// Older haloex-md versions kept the previous copy as a hard link, and a failed
// or killed write could leave "<path>.prev" a second name of `path` (a restart
// in place was then refused). Removes that second name -- the checkpoint stays
// under `path` -- and returns a note saying so; nothing when the two are
// separate files, missing, or either is not a regular file (a link is never
// taken for a second name).
std::optional<std::string> separateHardLinkedPreviousCheckpoint(const std::string& path);
// Whether "<path>.prev" is such a second name of `path`.
bool isHardLinkedPreviousCheckpoint(const std::string& path);

// Reads and checks everything: throws Io when the file cannot be read, and
// InvalidInput naming the file and the problem when it is not a haloex
// checkpoint, has a newer format version or the other byte order, is
// truncated ("expected N bytes, got M"), fails its checksum, or holds
// inconsistent atoms (count, duplicate or unsorted ids, bad types). The
// checksum is verified before the atom arrays are allocated.
CheckpointData readCheckpoint(const std::string& path);

// Everything but the atoms (system.box is set, the atom arrays stay empty):
// checks the header and the file size, not the checksum (that needs the whole
// file). For choosing options before the full read.
CheckpointData readCheckpointHeader(const std::string& path);

}  // namespace haloex::md
