#pragma once
// What this build is: the git commit it was built from ("-dirty" when the
// working tree had changes), for run summaries and benchmark records.
#include <string>

namespace haloex {
const char* gitCommit();
// This machine's host name (for run records).
std::string hostName();
// The current time as ISO 8601 UTC, e.g. "2026-11-29T15:35:55Z".
std::string utcTimestamp();
}  // namespace haloex
