#pragma once
// Run reports: the GROMACS-style performance summary on stdout and the JSON
// record (--json) that benchmarks collect.
#include <iosfwd>
#include <string>

#include "haloex/md/engine.hpp"

namespace haloex::md {

// Version of the JSON record's layout and meaning (2: ns_per_day and
// us_per_step count every step; the steady state is *_steady).
inline constexpr int kSummarySchemaVersion = 2;

void printPerformanceSummary(std::ostream& out, const RunSummary& summary, const MdOptions& options);
// The JSON record: schema_version, transport (with transport_reason, and
// auto_selection: what --transport auto measured, or null), ranks, grid, atoms, steps,
// ns_per_day and us_per_step (all steps), their *_steady twins, start-up,
// search-step parts, energies at the last energy step, timing, settings, commit.
std::string summaryToJson(const RunSummary& summary, const MdOptions& options);
void writeSummaryJson(const std::string& path, const RunSummary& summary, const MdOptions& options);

}  // namespace haloex::md
