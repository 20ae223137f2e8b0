#pragma once
// Backups of the outputs a fresh run would overwrite, as mdrun makes them: an
// existing file NAME becomes #NAME.1#, #NAME.2#, ... in its directory.
#include <optional>
#include <string>

namespace haloex::md {

// Renames a non-empty regular file at `path` to the first free
// #<name>.<n>#, n = 1..99, in its directory, without ever replacing a file
// or following a link planted under one of those names (RENAME_NOREPLACE);
// returns the new name (nothing when there was nothing to back up: no file,
// an empty one, or not a regular file). Throws InvalidInput when all 99 names
// are taken, Io when the rename fails otherwise; `role` ("--traj") names the
// output in errors.
std::optional<std::string> backUpExistingFile(const std::string& path, const std::string& role);

}  // namespace haloex::md
