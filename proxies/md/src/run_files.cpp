#include "haloex/md/run_files.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fmt/format.h>

#include "haloex/core/error.hpp"
#include "haloex/detail/core/safe_file.hpp"
#include "haloex/md/checkpoint.hpp"
#include "haloex/md/h5md_trajectory.hpp"

namespace haloex::md {
namespace {

bool isCheckpointInput(const RunFile& f) { return !f.output && f.role == "--restart"; }
bool isCheckpointOutput(const RunFile& f) { return f.output && f.role.starts_with("--cpt"); }

constexpr const char* kStopCheckpoint = "the checkpoint of a stop";
bool isStopCheckpoint(const RunFile& f) { return f.output && f.role.starts_with(kStopCheckpoint); }

// The checkpoint a stop writes without --cpt: an earlier regular file there is
// backed up by a rename when it is written, so only its directory must take
// new files; anything but a regular file there is refused now.
void requireStopCheckpointWritable(const RunFile& f) {
    struct stat st {};
    if (::lstat(f.path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return requireWritableOutput(f.role, f.path);
    const std::filesystem::path parent = std::filesystem::path(f.path).parent_path();
    requireWritableOutputDirectory(f.role, parent.empty() ? std::string(".") : parent.string());
}

// The checkpoint and its previous copy as two names of one file, which older
// versions could leave: separated when the outputs are opened
// (separateHardLinkedPreviousCheckpoint), not a collision.
bool isLegacyPreviousPair(const MdOptions& o, const RunFile& a, const RunFile& b) {
    return a.output && b.output && !o.checkpointFile.empty() &&
           ((a.path == o.checkpointFile && b.path == previousCheckpointPath(o.checkpointFile)) ||
            (b.path == o.checkpointFile && a.path == previousCheckpointPath(o.checkpointFile))) &&
           isHardLinkedPreviousCheckpoint(o.checkpointFile);
}

// The extension of `path` in lower case ("" when it has none).
std::string extensionOf(const std::string& path) {
    std::string ext = std::filesystem::path(path).extension().string();
    for (char& c : ext) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return ext;
}

std::string describeExtension(const std::string& path) {
    const std::string ext = std::filesystem::path(path).extension().string();
    return ext.empty() ? std::string("a name without an extension") : ext;
}

// The formats haloex-md writes, known by the extension: --traj x.xtc and
// --energy e.edr used to get .gro and .xvg text under names that promise
// formats their readers then fail on.
void requireKnownFormats(const MdOptions& o) {
    if (!o.trajFile.empty() && !isH5mdPath(o.trajFile) && extensionOf(o.trajFile) != ".gro") {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--traj {}: haloex-md writes a trajectory as .gro (text: a frame of every atom's "
                               "position, as gmx trjconv reads it) or as H5MD (.h5 or .h5md: float32, read by "
                               "MDAnalysis), not {}; give a name ending in .gro or .h5md",
                               o.trajFile, describeExtension(o.trajFile)));
    }
    if (!o.energyFile.empty() && extensionOf(o.energyFile) != ".xvg") {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--energy {}: haloex-md writes the energy series as .xvg text (what gmx energy "
                               "writes; xmgrace and numpy read it), not {}; give a name ending in .xvg",
                               o.energyFile, describeExtension(o.energyFile)));
    }
}

}  // namespace

std::vector<RunFile> runFiles(const MdOptions& o) {
    std::vector<RunFile> files;
    if (!o.groFile.empty()) files.push_back({"--gro", o.groFile, false});
    if (!o.restartFile.empty()) files.push_back({"--restart", o.restartFile, false});
    if (!o.checkpointFile.empty()) {
        files.push_back({"--cpt", o.checkpointFile, true});
        files.push_back({"--cpt (its previous copy)", previousCheckpointPath(o.checkpointFile), true});
    } else if (!o.stopCheckpointFile.empty()) {
        // Written only at a stop, but found unwritable now rather than then.
        files.push_back({fmt::format("{} (no --cpt)", kStopCheckpoint), o.stopCheckpointFile, true});
        files.push_back({fmt::format("{} (its previous copy)", kStopCheckpoint),
                         previousCheckpointPath(o.stopCheckpointFile), true});
    }
    if (!o.trajFile.empty()) files.push_back({"--traj", o.trajFile, true});
    if (!o.energyFile.empty()) files.push_back({"--energy", o.energyFile, true});
    if (!o.logFile.empty() && o.logFile != "none") files.push_back({"--log", o.logFile, true});
    if (!o.jsonFile.empty()) files.push_back({"--json", o.jsonFile, true});
    if (!o.autoCacheFile.empty()) files.push_back({"--auto-cache", o.autoCacheFile, true});
    if (!o.writeGromacsDir.empty()) {
        for (const char* name : {"conf.gro", "topol.top", "md.mdp"}) {
            files.push_back({fmt::format("--write-gromacs {} ({})", o.writeGromacsDir, name),
                             (std::filesystem::path(o.writeGromacsDir) / name).string(), true});
        }
    }
    return files;
}

void checkRunFiles(const MdOptions& o) {
    const std::vector<RunFile> files = runFiles(o);
    // Collisions first: "the same file as the input" says more than what a
    // path check would find wrong with a link to the input.
    for (std::size_t i = 0; i < files.size(); ++i) {
        for (std::size_t j = i + 1; j < files.size(); ++j) {
            const RunFile& a = files[i];
            const RunFile& b = files[j];
            if (!a.output && !b.output) continue;
            // Continuing in place: the checkpoint is read before the first step.
            if ((isCheckpointInput(a) && isCheckpointOutput(b)) || (isCheckpointInput(b) && isCheckpointOutput(a))) {
                continue;
            }
            if (!sameFile(a.path, b.path) || isLegacyPreviousPair(o, a, b)) continue;
            const RunFile& out = a.output ? a : b;
            const RunFile& other = a.output ? b : a;
            if (!other.output) {
                throwError(ErrorKind::InvalidInput,
                           fmt::format("{} {} is the same file as the input {} {}: the run would overwrite its input; "
                                       "give the output another name",
                                       out.role, out.path, other.role, other.path));
            }
            throwError(ErrorKind::InvalidInput,
                       fmt::format("{} {} and {} {} are the same file: one output would overwrite the other; give each "
                                   "output its own file",
                                   a.role, a.path, b.role, b.path));
        }
    }
    if (!o.writeGromacsDir.empty()) requireWritableOutputDirectory("--write-gromacs", o.writeGromacsDir);
    std::error_code ec;
    const bool gromacsDirExists = !o.writeGromacsDir.empty() && std::filesystem::is_directory(o.writeGromacsDir, ec);
    for (const RunFile& f : files) {
        if (!f.output) continue;
        // The directory --write-gromacs creates is checked above; its files then.
        if (f.role.starts_with("--write-gromacs") && !gromacsDirExists) continue;
        if (isStopCheckpoint(f)) {
            requireStopCheckpointWritable(f);
            continue;
        }
        requireWritableOutput(f.role, f.path);
    }
    requireKnownFormats(o);
}

std::vector<std::string> removeStaleRunTemporaries(const MdOptions& o) {
    std::vector<std::string> removed;
    for (const RunFile& f : runFiles(o)) {
        if (!f.output) continue;
        for (std::string& stale : removeStaleTemporaries(f.path)) removed.push_back(std::move(stale));
    }
    return removed;
}

}  // namespace haloex::md
