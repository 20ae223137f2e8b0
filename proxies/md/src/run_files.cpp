#include "haloex/md/run_files.hpp"

#include <filesystem>
#include <fmt/format.h>

#include "haloex/core/error.hpp"
#include "haloex/detail/core/safe_file.hpp"
#include "haloex/md/checkpoint.hpp"

namespace haloex::md {
namespace {

bool isCheckpointInput(const RunFile& f) { return !f.output && f.role == "--restart"; }
bool isCheckpointOutput(const RunFile& f) { return f.output && f.role.starts_with("--cpt"); }

// The checkpoint and its previous copy as two names of one file, which older
// versions could leave: separated when the outputs are opened
// (separateHardLinkedPreviousCheckpoint), not a collision.
bool isLegacyPreviousPair(const MdOptions& o, const RunFile& a, const RunFile& b) {
    return a.output && b.output && !o.checkpointFile.empty() &&
           ((a.path == o.checkpointFile && b.path == previousCheckpointPath(o.checkpointFile)) ||
            (b.path == o.checkpointFile && a.path == previousCheckpointPath(o.checkpointFile))) &&
           isHardLinkedPreviousCheckpoint(o.checkpointFile);
}

}  // namespace

std::vector<RunFile> runFiles(const MdOptions& o) {
    std::vector<RunFile> files;
    if (!o.groFile.empty()) files.push_back({"--gro", o.groFile, false});
    if (!o.restartFile.empty()) files.push_back({"--restart", o.restartFile, false});
    if (!o.checkpointFile.empty()) {
        files.push_back({"--cpt", o.checkpointFile, true});
        files.push_back({"--cpt (its previous copy)", previousCheckpointPath(o.checkpointFile), true});
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
        requireWritableOutput(f.role, f.path);
    }
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
