#pragma once
// What this build is: the git commit it was built from ("-dirty" when the
// working tree had changes), for run summaries and benchmark records.
namespace haloex {
const char* gitCommit();
}
