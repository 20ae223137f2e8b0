#pragma once
// H5MD 1.1 trajectories (--traj x.h5 / x.h5md) through the HDF5 C library:
// float32 positions of every atom in global-id order, as the .gro trajectory
// holds them, readable by MD analysis tools (MDAnalysis, VMD's H5MD plugin).
//
//   /h5md                      version [1, 1]; author (name: the user),
//                              creator (name "haloex-md", version and commit)
//   /particles/all/position    step (int64, frames), time (float64, frames,
//                              unit "ps"), value (float32, frames x atoms x 3,
//                              unit "nm"): chunked one frame a chunk, extensible
//   /particles/all/box         dimension 3, boundary "periodic" x 3; edges: a
//                              time-dependent element (value frames x 3, unit
//                              "nm"; step and time hard links to position's)
//
// No velocities: the leapfrog's are half a step behind the positions, and a
// file that pairs them with the frame's time would mislead its readers.
//
// The output layer (output_files.hpp) continues the file across restarts: it
// checks the frames a checkpoint recorded (count, the last frame's step and a
// checksum of the last position values), cuts back what came after the
// checkpoint (truncateFrames) and appends. Every frame is flushed to the file
// (H5Fflush), so a run killed between frames leaves a file that reads.
//
// Built without HDF5, every constructor throws InvalidInput saying so
// (h5mdAvailable() tells beforehand). Errors are haloex::Error: Io for what
// HDF5 could not do (with HDF5's innermost message), InvalidInput for a file
// that is not an H5MD trajectory this program can continue.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "haloex/core/vec3.hpp"

namespace haloex::md {

// Whether this build writes H5MD, and why not when it does not.
bool h5mdAvailable();
std::string h5mdUnavailableReason();
// Whether `path` names an H5MD trajectory by its extension (.h5 or .h5md, in
// any case: x.H5 used to be written as .gro text).
inline bool isH5mdPath(std::string_view path) {
    const auto endsWith = [&](std::string_view suffix) {
        if (path.size() < suffix.size()) return false;
        const std::string_view tail = path.substr(path.size() - suffix.size());
        return std::equal(tail.begin(), tail.end(), suffix.begin(), [](char a, char b) {
            return (a >= 'A' && a <= 'Z' ? static_cast<char>(a - 'A' + 'a') : a) == b;
        });
    };
    return endsWith(".h5") || endsWith(".h5md");
}

class H5mdTrajectory {
public:
    enum class Mode {
        // A new file, created exclusively under a temporary name and renamed
        // onto `path` (an existing regular file is replaced; a link, directory
        // or device there is refused, never written through).
        Create,
        Append,  // an existing H5MD trajectory of `atoms` atoms, continued
    };
    // `role` ("--traj") names the file in errors. Append refuses
    // (InvalidInput) a link, a file that is not HDF5, not an H5MD trajectory,
    // or one of another atom count.
    H5mdTrajectory(const std::string& path, const std::string& role, Mode mode, std::int64_t atoms);
    H5mdTrajectory(const H5mdTrajectory&) = delete;
    H5mdTrajectory& operator=(const H5mdTrajectory&) = delete;
    ~H5mdTrajectory();

    const std::string& path() const;
    std::int64_t atoms() const;
    std::int64_t frames() const;
    std::int64_t stepOf(std::int64_t frame) const;

    // The position values as one flat float32 array, frame after frame: its
    // length in bytes, and the FNV-1a-64 of its `tailBytes` bytes before
    // byte `end` (end <= positionBytes()): what a checkpoint records.
    std::uint64_t positionBytes() const;
    std::uint64_t positionTailChecksum(std::uint64_t end, std::uint64_t tailBytes) const;

    // Appends one frame (positions in nm, global-id order; `box` the edges in
    // nm) and flushes the file.
    void append(std::int64_t step, double time, const std::array<double, 3>& box, std::span<const Vec3d> positions);
    // Keeps the first `frames` frames (no more than there are) and flushes.
    void truncateFrames(std::int64_t frames);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace haloex::md
