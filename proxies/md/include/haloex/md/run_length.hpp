#pragma once
// How long a run is: --steps counts this job's steps; --until-step N names
// the whole run's last step, counted from step 0 across restarts (mdrun's
// nsteps, LAMMPS's "run N upto"), so the same command resubmitted after each
// stop ends the chain at step N exactly.
#include <cstdint>
#include <string>

#include "haloex/md/options.hpp"

namespace haloex::md {

// With --until-step N: `steps` becomes N - firstStep (firstStep: 0, or the
// --restart checkpoint's step at `checkpointPath`), and a start at N sets
// alreadyComplete. Throws InvalidInput for --until-step with --steps, and for a
// checkpoint past N. Without --until-step: nothing.
void resolveRunLength(MdOptions& options, std::int64_t firstStep, const std::string& checkpointPath);

// What haloex-md says of a run that is already complete (alreadyComplete).
std::string alreadyCompleteNote(const MdOptions& resolved);

}  // namespace haloex::md
