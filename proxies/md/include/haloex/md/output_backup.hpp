#pragma once
// Backups of the outputs a fresh run would overwrite, as mdrun makes them: an
// existing file NAME becomes #NAME.1#, #NAME.2#, ... in its directory.
#include <cstdint>
#include <optional>
#include <string>

#include "haloex/detail/core/safe_file.hpp"

namespace haloex::md {

// Renames a non-empty regular file at `path` to the first free
// #<name>.<n>#, n = 1..99, in its directory, without ever replacing a file
// or following a link planted under one of those names (RENAME_NOREPLACE);
// returns the new name (nothing when there was nothing to back up: no file,
// an empty one, or not a regular file). Throws InvalidInput when all 99 names
// are taken, Io when the rename fails otherwise; `role` ("--traj") names the
// output in errors.
std::optional<std::string> backUpExistingFile(const std::string& path, const std::string& role);

// Copies the bytes of `file` (the output at `path`) from byte `from` to its
// end into a new file, the first free #<name>.cut.<n>#, created exclusively
// (O_CREAT|O_EXCL|O_NOFOLLOW: never an existing name, never through a link)
// and fsync'ed: what a restart from an older checkpoint is about to cut off
// (RecordFile::truncate) is kept. Returns the new file's path. Throws as
// backUpExistingFile.
std::string backUpTail(const RecordFile& file, std::uint64_t from, const std::string& path, const std::string& role);

}  // namespace haloex::md
