#pragma once
// The run log (--log, md.log by default; "none": no log), as mdrun keeps one:
// per run segment a header (build, host, ranks, command line, the resolved
// settings with the reason for each automatic choice), an energy block at
// every energy step, and at the end the averages, the conserved-energy drift,
// the per-rank spread of the step's phases with the load imbalance, and the
// performance summary. Written through the output layer (output_files.hpp)
// like the trajectory and the energy file, so a restart continues it exactly
// where its checkpoint stood; a fresh run backs an existing log up to
// #md.log.1#, #md.log.2#, ... (as mdrun does) instead of overwriting it.
#include <optional>
#include <string>

#include "haloex/md/engine.hpp"
#include "haloex/md/output_backup.hpp"
#include "haloex/md/options.hpp"

namespace haloex::md {

// Whether the options ask for a log.
bool logEnabled(const MdOptions& o);

struct LogContext {
    std::string backend;    // the backend's description (GPU name, CPU reference)
    std::string transport;  // the transport's name
    std::string grid;       // the rank grid in use, NXxNYxNZ
    std::string search;     // where search steps run: device or host
    int ranks = 1;
    std::int64_t firstStep = 0;
    bool restarted = false;
    // The system's atoms (MdOptions::atoms is 0 for a --gro start).
    std::int64_t atoms = 0;
    StepKernelChoice stepKernels;  // as set up (RunSummary::stepKernels)
};
std::string logHeader(const MdOptions& o, const LogContext& context);
std::string logEnergyBlock(const EnergySample& sample);
// Averages over this segment's energy samples, the drift, the per-rank
// phases, and the performance summary printed on stdout.
std::string logEnd(const RunSummary& s, const MdOptions& o);

}  // namespace haloex::md
