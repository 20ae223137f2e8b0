#include "haloex/md/restart.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <vector>

#include "haloex/core/error.hpp"

namespace haloex::md {
namespace {

bool named(const MdOptions& o, const char* name) {
    return std::find(o.explicitOptions.begin(), o.explicitOptions.end(), name) != o.explicitOptions.end();
}

template <class T>
bool given(const MdOptions& o, const char* name, const T& value, const T& defaultValue) {
    return named(o, name) || value != defaultValue;
}

// The settings a restart must keep: a different list or time step changes the trajectory.
std::vector<std::string> differences(const MdOptions& o, const CheckpointData& c, bool onlyGiven) {
    const MdOptions defaults;
    std::vector<std::string> out;
    auto check = [&](const char* name, auto value, auto defaultValue, auto checkpointValue) {
        if (onlyGiven && !given(o, name, value, decltype(value)(defaultValue))) return;
        if (value != checkpointValue) {
            out.push_back(fmt::format("--{} {} (the checkpoint has {})", name, value, checkpointValue));
        }
    };
    check("rc", o.rc, defaults.rc, c.rc);
    check("rlist", o.rlist, 0.0, c.rlist);
    check("nstlist", o.nstlist, 0, c.nstlist);
    check("dt", o.dt, defaults.dt, c.dt);
    return out;
}

// A trajectory keeps its frame spacing, as mdrun's (nstxout-compressed comes
// from the run input, not from the command line): without --traj-every the
// checkpoint's. A different one is refused for the file the checkpoint
// continues where that file is found (OutputFiles::open, by the one rule that
// finds it): a path compared here missed a moved run directory.
void adoptTrajectorySpacing(MdOptions& o, const CheckpointData& c) {
    const auto rec =
        std::find_if(c.outputs.begin(), c.outputs.end(), [](const OutputPosition& p) { return p.role == "--traj"; });
    if (rec == c.outputs.end() || rec->every <= 0 || o.trajFile.empty()) return;
    if (!given(o, "traj-every", o.trajEvery, std::int64_t{0})) o.trajEvery = rec->every;
}

}  // namespace

MdOptions adoptCheckpointSettings(MdOptions o, const CheckpointData& c, const std::string& path) {
    const std::vector<std::string> changed = differences(o, c, true);
    if (!changed.empty()) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--restart {}: {} differ from the checkpoint's; a restart keeps rc, rlist, nstlist "
                               "and dt: leave these options out to use the checkpoint's values",
                               path, fmt::join(changed, ", ")));
    }
    // The tolerance only chooses rlist and nstlist, which the checkpoint fixes:
    // accepting it would promise a drift the run does not aim for.
    if (named(o, "buffer-tolerance")) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--buffer-tolerance {:g} with --restart {}: a restart keeps the checkpoint's rlist "
                               "{:g} nm and nstlist {}, which its buffer tolerance chose; leave --buffer-tolerance "
                               "out, or start a new run (--gro) to choose them again",
                               o.bufferTolerance, path, c.rlist, c.nstlist));
    }
    if (!o.groFile.empty()) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--gro {} and --restart {}: both give the start configuration; use one", o.groFile,
                               path));
    }
    if (o.atoms != 0 && o.atoms != c.atomCount) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--atoms {} but the checkpoint {} holds {} atoms; leave --atoms out", o.atoms, path,
                               c.atomCount));
    }
    const MdOptions defaults;
    o.rc = c.rc;
    o.rlist = c.rlist;
    o.nstlist = c.nstlist;
    o.dt = c.dt;
    o.atoms = c.atomCount;
    if (!given(o, "seed", o.seed, defaults.seed)) o.seed = c.seed;
    if (!given(o, "temperature", o.temperature, defaults.temperature)) o.temperature = c.temperature;
    if (!given(o, "thermostat", o.thermostat, defaults.thermostat)) o.thermostat = c.thermostat;
    if (!given(o, "tau-t", o.tauT, defaults.tauT)) o.tauT = c.tauT;
    // Energy steps keep their spacing, as mdrun's nstcalcenergy comes from the
    // run input: the default (steps / 10) would change with --steps, and with
    // it the thermostat's coupling interval and the rows of the log and .xvg.
    if (!given(o, "thermo-every", o.thermoEvery, defaults.thermoEvery) && c.thermoEvery > 0) {
        o.thermoEvery = c.thermoEvery;
    }
    adoptTrajectorySpacing(o, c);
    return o;
}

void requireCheckpointSettings(const MdOptions& resolved, const CheckpointData& c, const std::string& path) {
    const std::vector<std::string> changed = differences(resolved, c, false);
    if (!changed.empty()) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--restart {}: the run's {} differ from the checkpoint's; resolve the options with "
                               "resolveOptions (it adopts the checkpoint's settings)",
                               path, fmt::join(changed, ", ")));
    }
}

}  // namespace haloex::md
