#include "haloex/md/gro.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <istream>
#include <iterator>
#include <limits>
#include <ostream>

#include "haloex/core/error.hpp"
#include "haloex/detail/core/printable.hpp"
#include "haloex/detail/core/safe_file.hpp"

namespace haloex::md {

namespace {

// Fixed columns of a .gro atom line (0-based): residue number 0-4, residue
// name 5-9, atom name 10-14, atom number 15-19, coordinates from 20.
constexpr std::size_t kResidueNameColumn = 5;
constexpr std::size_t kAtomNameColumn = 10;
constexpr std::size_t kNameWidth = 5;
constexpr std::size_t kFirstCoordinateColumn = 20;
constexpr int kGroNumberWrap = 100000;

std::string_view trim(std::string_view s) {
    const auto isSpace = [](char c) { return c == ' ' || c == '\t'; };
    while (!s.empty() && isSpace(s.front())) s.remove_prefix(1);
    while (!s.empty() && isSpace(s.back())) s.remove_suffix(1);
    return s;
}

bool isBlank(std::string_view s) { return trim(s).empty(); }

// The whole (trimmed) text must be a number; nan/inf parse and are caught by the callers.
std::optional<double> parseDouble(std::string_view text) {
    text = trim(text);
    if (text.empty()) return std::nullopt;
    if (text.front() == '+') text.remove_prefix(1);
    double value = 0.0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

std::optional<long long> parseInteger(std::string_view text) {
    text = trim(text);
    if (text.empty()) return std::nullopt;
    if (text.front() == '+') text.remove_prefix(1);
    long long value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

// Whitespace-separated numbers of a free-format line, or nullopt when a token is not a number.
std::optional<std::vector<double>> parseNumberList(std::string_view line) {
    std::vector<double> values;
    std::size_t pos = 0;
    while (pos < line.size()) {
        while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
        if (pos == line.size()) break;
        std::size_t end = pos;
        while (end < line.size() && line[end] != ' ' && line[end] != '\t') ++end;
        const auto value = parseDouble(line.substr(pos, end - pos));
        if (!value) return std::nullopt;
        values.push_back(*value);
        pos = end;
    }
    return values;
}

bool looksLikeBoxLine(std::string_view line) {
    const auto values = parseNumberList(line);
    return values && (values->size() == 3 || values->size() == 9);
}

// Type from the residue and atom names (docs/md-engine.md#the-system-and-its-defaults), -1 when unknown.
int typeFromNames(std::string_view residue, std::string_view atom) {
    if (residue == "POS" && atom == "P") return 0;
    if (residue == "NEG" && atom == "N") return 1;
    return -1;
}

}  // namespace

GroReader::GroReader(std::istream& in, std::string sourceName) : in_(in), sourceName_(std::move(sourceName)) {}

bool GroReader::getLine(std::string& line) {
    // Bounded: a file without line ends (a binary file, /dev/zero) must not
    // grow the line to the memory limit.
    lineBuffer_.resize(kMaxGroLineLength + 2);
    in_.getline(lineBuffer_.data(), static_cast<std::streamsize>(lineBuffer_.size()));
    const auto got = static_cast<std::size_t>(in_.gcount());
    if (in_.bad()) {
        throwError(ErrorKind::Io, fmt::format("{}:{}: read error", printable(sourceName_, 4096), lineNumber_ + 1));
    }
    if (in_.fail() && got == 0 && in_.eof()) return false;
    // gcount counts the line end when one was read (not at the end of the
    // file); failbit without the end of the file: the buffer filled up.
    const std::size_t length = in_.eof() ? got : got - 1;
    if ((in_.fail() && !in_.eof()) || length > kMaxGroLineLength) {
        fail(lineNumber_ + 1, fmt::format("the line is longer than {} characters", kMaxGroLineLength),
             "a .gro file: a title line, the number of atoms, one line per atom and a box line");
    }
    line.assign(lineBuffer_.data(), length);
    ++lineNumber_;
    if (!line.empty() && line.back() == '\r') line.pop_back();  // files written on Windows
    return true;
}

void GroReader::fail(long line, const std::string& reason, const std::string& expected) const {
    throwError(ErrorKind::InvalidInput,
               fmt::format("{}:{}: {} (expected {})", printable(sourceName_, 4096), line, reason, expected));
}

std::optional<GroFrame> GroReader::next() {
    GroFrame frame;
    if (!getLine(frame.title)) return std::nullopt;
    const long titleLine = lineNumber_;

    std::string countLine;
    if (!getLine(countLine)) {
        if (isBlank(frame.title)) return std::nullopt;  // a trailing blank line after the last frame
        fail(lineNumber_ + 1, "unexpected end of file after the title line", "a line with the number of atoms");
    }
    if (isBlank(frame.title) && isBlank(countLine)) {
        // Blank lines after the last frame are fine; anything else after them is not a frame.
        std::string more;
        while (getLine(more)) {
            if (!isBlank(more)) {
                fail(titleLine + 1, "blank line where the number of atoms belongs",
                     "a title line, then the number of atoms on its own line");
            }
        }
        return std::nullopt;
    }
    const long countLineNumber = lineNumber_;
    const auto count = parseInteger(countLine);
    if (!count) {
        fail(countLineNumber, fmt::format("'{}' is not an atom count", printable(trim(countLine))),
             "the number of atoms as a whole number on the line after the title");
    }
    if (*count <= 0 || *count > std::numeric_limits<int>::max()) {
        fail(countLineNumber, fmt::format("atom count {} is out of range", *count),
             fmt::format("a positive number of atoms, at most {}", std::numeric_limits<int>::max()));
    }
    const int numAtoms = static_cast<int>(*count);

    System& sys = frame.system;
    // Grow as lines arrive: a corrupt count must not allocate gigabytes up front.
    const auto reserve = static_cast<std::size_t>(std::min(numAtoms, 1 << 20));
    sys.positions.reserve(reserve);
    sys.velocities.reserve(reserve);
    sys.types.reserve(reserve);
    sys.globalIds.reserve(reserve);

    std::size_t width = 0;  // characters per coordinate field, from the first atom line
    std::string line;
    for (int a = 0; a < numAtoms; ++a) {
        const std::string atomLabel = fmt::format("atom {} of {}", a + 1, numAtoms);
        if (!getLine(line)) {
            fail(lineNumber_ + 1, fmt::format("unexpected end of file: {} is missing", atomLabel),
                 fmt::format("{} atom lines, as line {} says, then the box line", numAtoms, countLineNumber));
        }
        // An atom line has names, so a line of numbers only is the box line: the count is too large.
        if (looksLikeBoxLine(line)) {
            fail(lineNumber_, fmt::format("found the box line where {} belongs", atomLabel),
                 fmt::format("{} atom lines, as line {} says", numAtoms, countLineNumber));
        }
        if (a == 0) {
            // Like GROMACS: the distance between the first two decimal points is the field width.
            const std::size_t first = line.find('.', kFirstCoordinateColumn);
            const std::size_t second = first == std::string::npos ? first : line.find('.', first + 1);
            if (second == std::string::npos || second - first < 6 || second - first > 30) {
                fail(lineNumber_, fmt::format("cannot find the coordinate fields of {}", atomLabel),
                     "residue number, residue name, atom name and atom number in 20 columns, then x, y, z in "
                     "fixed-width fields such as %8.3f");
            }
            width = second - first;
        }
        const std::size_t positionsEnd = kFirstCoordinateColumn + 3 * width;
        if (line.size() < positionsEnd) {
            fail(lineNumber_, fmt::format("line of {} is too short ({} characters)", atomLabel, line.size()),
                 fmt::format("at least {} characters: 20 for numbers and names, then x, y, z in {}-character fields",
                             positionsEnd, width));
        }

        const std::string_view residue = trim(std::string_view(line).substr(kResidueNameColumn, kNameWidth));
        const std::string_view atom = trim(std::string_view(line).substr(kAtomNameColumn, kNameWidth));
        const int type = typeFromNames(residue, atom);
        if (type < 0) {
            fail(lineNumber_,
                 fmt::format("{} has residue '{}' and atom '{}'", atomLabel, printable(residue), printable(atom)),
                 "residue POS with atom P (+q) or residue NEG with atom N (-q)");
        }
        sys.types.push_back(type);
        sys.globalIds.push_back(a);

        const auto readVector = [&](std::size_t column, const char* what, const char* format) {
            static constexpr char kAxis[] = "xyz";
            Vec3d v{};
            for (int d = 0; d < 3; ++d) {
                const std::size_t start = column + d * width;
                const std::string_view field = std::string_view(line).substr(start, width);
                const auto value = parseDouble(field);
                const std::string expected =
                    fmt::format("a number in columns {}-{}, as in {}", start + 1, start + width, format);
                if (!value) {
                    fail(lineNumber_,
                         fmt::format("{} {} of {} is '{}', not a number", what, kAxis[d], atomLabel,
                                     printable(trim(field))),
                         expected);
                }
                if (!std::isfinite(*value)) {
                    fail(lineNumber_,
                         fmt::format("{} {} of {} is not finite ('{}')", what, kAxis[d], atomLabel,
                                     printable(trim(field))),
                         "a finite " + expected);
                }
                v[d] = *value;
            }
            return v;
        };
        sys.positions.push_back(readVector(kFirstCoordinateColumn, "coordinate", "%8.3f"));

        const std::size_t velocitiesEnd = positionsEnd + 3 * width;
        const std::string_view rest = std::string_view(line).substr(positionsEnd);
        if (a == 0) frame.hasVelocities = !isBlank(rest);
        if (!frame.hasVelocities && !isBlank(rest)) {
            // The first atom line decides; dropping later lines' velocities
            // silently (as it used to) would start from the wrong state.
            fail(lineNumber_, fmt::format("{} has velocities, but atom 1 of {} has none", atomLabel, numAtoms),
                 "velocities on every atom line or on none; add the first atom's or remove the others");
        }
        if (frame.hasVelocities) {
            if (line.size() < velocitiesEnd) {
                fail(lineNumber_,
                     fmt::format("velocities of {} are incomplete (line has {} characters)", atomLabel, line.size()),
                     fmt::format("{} characters: vx, vy, vz in {}-character fields like the first atom line",
                                 velocitiesEnd, width));
            }
            sys.velocities.push_back(readVector(positionsEnd, "velocity", "%8.4f"));
        } else {
            sys.velocities.push_back(Vec3d{});
        }
    }

    if (!getLine(line)) {
        fail(lineNumber_ + 1, "unexpected end of file: the box line is missing",
             fmt::format("the box lengths in nm after the {} atom lines", numAtoms));
    }
    const auto boxValues = parseNumberList(line);
    if (!boxValues || (boxValues->size() != 3 && boxValues->size() != 9)) {
        if (line.size() >= kFirstCoordinateColumn + 3 * width && !looksLikeBoxLine(line)) {
            fail(lineNumber_, "found another atom line where the box line belongs",
                 fmt::format("the box line after exactly {} atom lines, as line {} says", numAtoms, countLineNumber));
        }
        fail(lineNumber_, fmt::format("bad box line '{}'", printable(trim(line))),
             "3 box lengths in nm (or 9 values of a box with zero off-diagonal elements)");
    }
    const auto& b = *boxValues;
    for (std::size_t i = 0; i < b.size(); ++i) {
        if (!std::isfinite(b[i])) {
            fail(lineNumber_, fmt::format("box value {} is not finite", i + 1), "finite box lengths in nm");
        }
    }
    for (std::size_t i = 3; i < b.size(); ++i) {
        if (b[i] != 0.0) {
            fail(lineNumber_, fmt::format("triclinic box: off-diagonal element {} is {}", i - 2, b[i]),
                 "an orthorhombic box; haloex supports only rectangular boxes");
        }
    }
    for (int d = 0; d < 3; ++d) {
        if (b[d] <= 0.0) {
            fail(lineNumber_, fmt::format("box length {} is {}", "xyz"[d], b[d]), "positive box lengths in nm");
        }
        sys.box.length[d] = b[d];
    }
    return frame;
}

namespace {

// A directory opens as a stream that fails at the first read ("read error"):
// said for what it is.
void requireNotADirectory(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{} is a directory, not a .gro file; give the path of the file", path));
    }
}

}  // namespace

GroFrame readGro(const std::string& path) {
    requireNotADirectory(path);
    std::ifstream in(path);
    if (!in) {
        throwError(ErrorKind::Io,
                   fmt::format("cannot open {} for reading: {}; check the path", path, std::strerror(errno)));
    }
    GroReader reader(in, path);
    auto frame = reader.next();
    if (!frame) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{}:1: the file holds no frame (expected a title line, the number of atoms, one line "
                               "per atom and a box line)",
                               path));
    }
    return std::move(*frame);
}

std::vector<GroFrame> readGroTrajectory(const std::string& path) {
    requireNotADirectory(path);
    std::ifstream in(path);
    if (!in) {
        throwError(ErrorKind::Io,
                   fmt::format("cannot open {} for reading: {}; check the path", path, std::strerror(errno)));
    }
    GroReader reader(in, path);
    std::vector<GroFrame> frames;
    while (auto frame = reader.next()) frames.push_back(std::move(*frame));
    if (frames.empty()) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{}:1: the file holds no frame (expected a title line, the number of atoms, one line "
                               "per atom and a box line)",
                               path));
    }
    return frames;
}

namespace {

// Formats value with the given spec and refuses what would overflow the fixed column.
void appendField(std::string& buffer, double value, int width, int decimals, std::string_view what) {
    const std::size_t before = buffer.size();
    if (std::isfinite(value)) fmt::format_to(std::back_inserter(buffer), "{:{}.{}f}", value, width, decimals);
    if (!std::isfinite(value) || buffer.size() - before != static_cast<std::size_t>(width)) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("cannot write {} = {} to a .gro file: it does not fit a %{}.{}f field", what, value,
                               width, decimals));
    }
}

}  // namespace

std::string formatGro(const System& system, std::string_view title, bool withVelocities) {
    system.validate();
    std::string cleanTitle(title);
    for (char& c : cleanTitle) {
        if (c == '\n' || c == '\r') c = ' ';  // the title is one line
    }
    const int n = system.size();
    std::string buffer;
    buffer.reserve(static_cast<std::size_t>(n) * (withVelocities ? 69 : 45) + cleanTitle.size() + 64);
    fmt::format_to(std::back_inserter(buffer), "{}\n{}\n", cleanTitle, n);
    for (int i = 0; i < n; ++i) {
        const bool positive = system.types[i] == 0;
        const int number = (i + 1) % kGroNumberWrap;
        fmt::format_to(std::back_inserter(buffer), "{:5d}{:<5}{:>5}{:5d}", number, positive ? "POS" : "NEG",
                       positive ? "P" : "N", number);
        for (int d = 0; d < 3; ++d) {
            appendField(buffer, system.positions[i][d], 8, 3, fmt::format("coordinate {} of atom {}", "xyz"[d], i));
        }
        if (withVelocities) {
            for (int d = 0; d < 3; ++d) {
                appendField(buffer, system.velocities[i][d], 8, 4, fmt::format("velocity {} of atom {}", "xyz"[d], i));
            }
        }
        buffer += '\n';
    }
    for (int d = 0; d < 3; ++d)
        appendField(buffer, system.box.length[d], 10, 5, fmt::format("box length {}", "xyz"[d]));
    buffer += '\n';
    return buffer;
}

void writeGro(std::ostream& out, const System& system, std::string_view title, bool withVelocities) {
    const std::string buffer = formatGro(system, title, withVelocities);
    out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    if (!out) throwError(ErrorKind::Io, "writing a .gro frame failed (disk full or stream closed?)");
}

void writeGro(const std::string& path, const System& system, std::string_view title, bool withVelocities) {
    writeFileAtomically(path, formatGro(system, title, withVelocities), ".gro file");
}

GroTrajectoryWriter::GroTrajectoryWriter(const std::string& path, Mode mode)
    : file_(path, "trajectory", mode == Mode::Append ? RecordFile::Mode::Append : RecordFile::Mode::Truncate) {}

void GroTrajectoryWriter::writeFrame(const System& system, std::string_view title, bool withVelocities) {
    // Formatted first (a coordinate that does not fit throws before anything
    // is written), then appended whole.
    file_.append(formatGro(system, title, withVelocities));
    ++framesWritten_;
}

}  // namespace haloex::md
