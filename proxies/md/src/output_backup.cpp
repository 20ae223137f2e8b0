#include "haloex/md/output_backup.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>

#include "haloex/core/error.hpp"

namespace haloex::md {

std::optional<std::string> backUpExistingFile(const std::string& path, const std::string& role) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) return std::nullopt;
    const std::filesystem::path p(path);
    for (int n = 1; n <= 99; ++n) {
        const std::filesystem::path backup = p.parent_path() / fmt::format("#{}.{}#", p.filename().string(), n);
        // A rename that never replaces an existing name (nor follows a link
        // planted under it): the backup cannot destroy anything, and the file
        // never has two names.
        if (::renameat2(AT_FDCWD, path.c_str(), AT_FDCWD, backup.c_str(), RENAME_NOREPLACE) == 0) {
            return backup.string();
        }
        if (errno == EINVAL || errno == ENOSYS) {
            // No RENAME_NOREPLACE here: link() never replaces a name either.
            if (::link(path.c_str(), backup.c_str()) == 0) {
                if (::unlink(path.c_str()) != 0) {
                    throwError(ErrorKind::Io, fmt::format("{} {}: backed up to {} but could not remove it: {}", role,
                                                          path, backup.string(), std::strerror(errno)));
                }
                return backup.string();
            }
        }
        if (errno != EEXIST) {
            throwError(ErrorKind::Io, fmt::format("{} {}: cannot back it up to {}: {}; give {} another name", role,
                                                  path, backup.string(), std::strerror(errno), role));
        }
    }
    throwError(ErrorKind::InvalidInput,
               fmt::format("{} {}: it exists, and so do its 99 backups #{}.1# ... #{}.99#; remove old backups or "
                           "give {} another name",
                           role, path, p.filename().string(), p.filename().string(), role));
}

}  // namespace haloex::md
