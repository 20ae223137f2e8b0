#include "haloex/md/run_length.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "haloex/core/error.hpp"

namespace haloex::md {

void resolveRunLength(MdOptions& o, std::int64_t firstStep, const std::string& checkpointPath) {
    if (o.untilStep == kNoUntilStep) return;
    if (std::find(o.explicitOptions.begin(), o.explicitOptions.end(), "steps") != o.explicitOptions.end()) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--until-step {} and --steps {}: give one. --until-step is the last step of the "
                               "whole run, counted from step 0 across restarts (a resubmitted job runs what is "
                               "left); --steps the steps of this job",
                               o.untilStep, o.steps));
    }
    if (firstStep > o.untilStep) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("--until-step {}: checkpoint {} is at step {}, past it; give the run's last step "
                               "(at least {}), or restart from an earlier checkpoint",
                               o.untilStep, checkpointPath, firstStep, firstStep));
    }
    o.alreadyComplete = firstStep == o.untilStep;
    o.steps = o.untilStep - firstStep;
}

std::string alreadyCompleteNote(const MdOptions& o) {
    return fmt::format("The run is already complete: checkpoint {} is at step {}, the last of --until-step {}. "
                       "Nothing was run or written (exit status 0: a chain of resubmitted jobs ends here)",
                       o.restartFile, o.untilStep, o.untilStep);
}

}  // namespace haloex::md
