#include "haloex/md/output_names.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>

#include "haloex/core/error.hpp"

namespace haloex::md {
namespace fs = std::filesystem;
namespace {

bool present(const fs::path& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

// `path` as a user in the working directory would type it.
std::string shown(const fs::path& path) {
    std::error_code ec;
    const fs::path cwd = fs::current_path(ec);
    if (ec || !path.is_absolute()) return path.string();
    const fs::path relative = path.lexically_normal().lexically_relative(cwd);
    if (relative.empty() || *relative.begin() == "..") return path.string();
    return relative.string();
}

bool named(const MdOptions& o, const char* option) {
    return std::find(o.explicitOptions.begin(), o.explicitOptions.end(), option) != o.explicitOptions.end();
}

void applyDefaultName(MdOptions& o) {
    const std::string& name = o.defaultName;
    std::error_code ec;
    if (name.ends_with('/') || fs::is_directory(name, ec)) {
        std::string directory = name;
        while (directory.size() > 1 && directory.ends_with('/')) directory.pop_back();
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--deffnm {}: a base name for the output files (NAME.log, NAME.xvg, NAME.cpt, "
                               "NAME.json), not a directory; give e.g. --deffnm {}",
                               name, (fs::path(directory) / "md").string()));
    }
    if (o.logFile.empty()) o.logFile = name + ".log";
    if (o.energyFile.empty()) o.energyFile = name + ".xvg";
    if (o.checkpointFile.empty()) o.checkpointFile = name + ".cpt";
    if (o.jsonFile.empty()) o.jsonFile = name + ".json";
    // A trajectory only where one is asked for, as mdrun writes none without nstxout.
    if (o.trajFile.empty() && (named(o, "traj-every") || o.trajEvery != 0)) o.trajFile = name + ".gro";
}

// The outputs `checkpoint` recorded that no name was given for, and the
// checkpoint file itself (mdrun always writes checkpoints): continued.
void continueRecordedOutputs(MdOptions& o, const CheckpointData& checkpoint) {
    const auto continueRecorded = [&](const char* role, std::string& name) {
        if (!name.empty()) return;  // named: a new file from the checkpoint's step, or the same one
        const auto rec = std::find_if(checkpoint.outputs.begin(), checkpoint.outputs.end(),
                                      [&](const OutputPosition& p) { return p.role == role; });
        if (rec == checkpoint.outputs.end()) return;
        name = locateRecordedOutput(rec->path, o.restartFile);
        o.continuedOutputs.push_back(fmt::format("{} {}", role, name));
    };
    if (checkpoint.outputsRecorded) {
        continueRecorded("--traj", o.trajFile);
        continueRecorded("--energy", o.energyFile);
        continueRecorded("--log", o.logFile);
    }
    if (o.checkpointFile.empty()) o.checkpointFile = o.restartFile;
}

}  // namespace

std::string locateRecordedOutput(const std::string& recorded, const std::string& checkpointPath) {
    if (present(recorded)) return shown(recorded);
    const fs::path beside = fs::path(checkpointPath).parent_path() / fs::path(recorded).filename();
    if (present(beside)) return beside.string();
    return shown(recorded);
}

MdOptions resolveOutputNames(MdOptions o, const CheckpointData* checkpoint) {
    if (!o.defaultName.empty()) applyDefaultName(o);
    if (checkpoint != nullptr && o.continueRecordedOutputs) continueRecordedOutputs(o, *checkpoint);
    if (o.logFile.empty()) o.logFile = o.defaultLogFile;
    return o;
}

}  // namespace haloex::md
