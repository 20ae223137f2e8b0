#pragma once
// The names of a run's outputs, as mdrun users expect them (docs/running.md,
// "Campaigns"): a name given on its own (--traj, --energy, --log, --cpt,
// --json) wins; then --deffnm NAME gives NAME.log, NAME.xvg, NAME.cpt,
// NAME.json, and NAME.gro where --traj-every asks for a trajectory; then a
// --restart continues the outputs its checkpoint recorded (trajectory,
// energy file, log: mdrun -cpi continues the files its checkpoint names) and
// writes its checkpoints back into the checkpoint it started from (where
// MdOptions::continueRecordedOutputs is set, as haloex-md sets it); then the
// defaults (the log md.log). Without this a restart
// that did not repeat the output names wrote no trajectory, no energies and
// no checkpoint, and began a new log.
#include <string>

#include "haloex/md/checkpoint.hpp"
#include "haloex/md/options.hpp"

namespace haloex::md {

// The options with their output names filled as above. `checkpoint`: the
// --restart checkpoint's header (nullptr for a fresh run). The outputs taken
// from the checkpoint are listed in continuedOutputs ("--traj traj.gro");
// whether each can be continued is checked when the outputs are opened
// (RunOutput::open: all of them before any is changed). Throws InvalidInput
// for a --deffnm that ends in '/' or names a directory.
MdOptions resolveOutputNames(MdOptions options, const CheckpointData* checkpoint);

// Where an output the checkpoint recorded at the absolute path `recorded` is
// taken from: that path where something is there; otherwise the same file
// name next to the checkpoint `checkpointPath` (as given), where a run
// directory moved as a whole left it, if something is there; otherwise
// `recorded` (refused as missing when opened). Relative to the working
// directory when it lies below it, as a user would type it.
std::string locateRecordedOutput(const std::string& recorded, const std::string& checkpointPath);

}  // namespace haloex::md
