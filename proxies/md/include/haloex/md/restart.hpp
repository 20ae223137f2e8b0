#pragma once
// Continuing a run from a checkpoint (--restart): which settings come from
// the checkpoint and which the user may not change.
#include <string>

#include "haloex/md/checkpoint.hpp"
#include "haloex/md/options.hpp"

namespace haloex::md {

// The options of a restart from `checkpoint` (read from `path`, usually with
// readCheckpointHeader): rc, rlist, nstlist and dt are the checkpoint's, and a
// given value that differs is refused (InvalidInput naming each option, both
// values and what to do); seed, temperature, thermostat and tau-t are the
// checkpoint's unless given; atoms is the checkpoint's count (--atoms or --gro
// that disagree are refused); traj-every and thermo-every are the
// checkpoint's unless given (a different one for the file the checkpoint
// continues is refused where that file is found: OutputFiles::open). An
// option is "given" when its name is in
// options.explicitOptions or its value differs from MdOptions{}'s (rlist and
// nstlist: non-zero). Call before filling the automatic values (resolveOptions
// does).
MdOptions adoptCheckpointSettings(MdOptions options, const CheckpointData& checkpoint, const std::string& path);

// Throws InvalidInput unless `resolved` has the checkpoint's rc, rlist,
// nstlist and dt (options not resolved against the checkpoint).
void requireCheckpointSettings(const MdOptions& resolved, const CheckpointData& checkpoint, const std::string& path);

}  // namespace haloex::md
