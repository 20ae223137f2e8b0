#pragma once
// GROMACS .gro files for the proxy system (docs/md-engine.md#the-system-and-its-defaults).
//
// Layout: a title line, the atom count, one fixed-column line per atom
// ("%5d%-5s%5s%5d" residue number, residue name, atom name, atom number, then
// x y z in "%8.3f"-style fields and optionally vx vy vz in "%8.4f"-style
// fields), and a box line. Like GROMACS, the reader takes the field width from
// the distance between the first two decimal points of the first atom line, so
// higher-precision files (%10.5f ...) read too. Only orthorhombic boxes: a
// 9-value box line with a non-zero off-diagonal element is refused.
//
// Types come from the names: residue POS / atom P is type 0 (+q), residue NEG /
// atom N is type 1 (-q). Residue and atom numbers are not checked (they wrap at
// 100000). Atoms outside the box are kept (wrapping comes later); non-finite
// coordinates are refused. Every malformed input throws haloex::Error with
// "FILE:LINE: reason (what was expected)"; text quoted from the file has its
// control bytes escaped (\xNN). Lines are read up to kMaxGroLineLength
// characters: a longer one (a binary file, /dev/zero) is refused without
// reading on.
#include <fstream>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "haloex/detail/core/safe_file.hpp"
#include "haloex/md/system.hpp"

namespace haloex::md {

// Longest line the reader accepts (atom lines have 44-200 characters).
inline constexpr std::size_t kMaxGroLineLength = 4096;

struct GroFrame {
    std::string title;
    System system;  // globalIds 0..N-1 in file order; zero velocities when absent
    bool hasVelocities = false;
};

// Reads frames one after the other from a stream; sourceName names the input
// in error messages (usually the file name).
class GroReader {
public:
    GroReader(std::istream& in, std::string sourceName);
    // The next frame, or nullopt at the end of the input (only blank lines left).
    std::optional<GroFrame> next();

private:
    bool getLine(std::string& line);
    [[noreturn]] void fail(long line, const std::string& reason, const std::string& expected) const;
    std::istream& in_;
    std::string sourceName_;
    long lineNumber_ = 0;  // number of the last line read (1-based)
    std::vector<char> lineBuffer_;
};

// The first frame of a .gro file. Throws Io when it cannot be opened.
GroFrame readGro(const std::string& path);
// Every frame of a multi-frame .gro trajectory (at least one).
std::vector<GroFrame> readGroTrajectory(const std::string& path);

// Writes one frame: "%8.3f" positions, "%8.4f" velocities, "%10.5f" box;
// atom and residue numbers are 1-based and wrap at 100000 like GROMACS.
// Throws InvalidInput for a coordinate that does not fit its field, Io when
// the stream fails. The file version replaces `path` atomically (a regular
// file or a new name: haloex/detail/core/safe_file.hpp).
std::string formatGro(const System& system, std::string_view title, bool withVelocities);
void writeGro(std::ostream& out, const System& system, std::string_view title, bool withVelocities);
void writeGro(const std::string& path, const System& system, std::string_view title, bool withVelocities);

// Appends frames to a .gro trajectory, each frame with one write that is
// truncated back when it fails, so the file never ends in a torn frame; the
// frames written survive a crash of the program. Refuses a path that is not a
// regular file (a directory, device, FIFO or symbolic link).
class GroTrajectoryWriter {
public:
    enum class Mode { Truncate, Append };
    explicit GroTrajectoryWriter(const std::string& path, Mode mode = Mode::Truncate);

    void writeFrame(const System& system, std::string_view title, bool withVelocities);
    int framesWritten() const { return framesWritten_; }
    const std::string& path() const { return file_.path(); }

private:
    RecordFile file_;
    int framesWritten_ = 0;
};

}  // namespace haloex::md
