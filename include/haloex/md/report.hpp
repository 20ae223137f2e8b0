#pragma once
// Run reports: the GROMACS-style performance summary on stdout and the JSON
// record (--json) that benchmarks collect.
#include <iosfwd>
#include <string>

#include "haloex/md/engine.hpp"

namespace haloex::md {

void printPerformanceSummary(std::ostream& out, const RunSummary& summary, const MdOptions& options);
// The JSON record: transport, ranks, grid, atoms, steps, ns_per_day,
// us_per_step, energies at the last energy step, timing, settings, commit.
std::string summaryToJson(const RunSummary& summary, const MdOptions& options);
void writeSummaryJson(const std::string& path, const RunSummary& summary, const MdOptions& options);

}  // namespace haloex::md
