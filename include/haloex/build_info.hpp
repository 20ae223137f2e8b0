#pragma once
/// @file
/// What this build is: the git commit it was built from ("-dirty" when the
/// working tree had changes), for run summaries and benchmark records, and the
/// versions it was configured with, for --version.
#include <string>

namespace haloex {
/// The git commit this build was made from, "-dirty" appended when the tree had changes.
const char* gitCommit();
/// Several lines: "<program> (haloex <version>), commit <commit>", the build
/// type and compiler, and the CUDA (with the GPU architectures compiled for),
/// MPI, NCCL and NVSHMEM versions the build was configured with, and whether it
/// writes H5MD (the HDF5 version).
std::string buildDescription(const std::string& program);
/// This machine's host name (for run records).
std::string hostName();
/// The current time as ISO 8601 UTC, e.g. "2026-11-29T15:35:55Z".
std::string utcTimestamp();
}  // namespace haloex
