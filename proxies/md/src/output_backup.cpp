#include "haloex/md/output_backup.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>
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

std::string backUpTail(const RecordFile& file, std::uint64_t from, const std::string& path, const std::string& role) {
    const std::filesystem::path p(path);
    for (int n = 1; n <= 99; ++n) {
        std::string backup = (p.parent_path() / fmt::format("#{}.cut.{}#", p.filename().string(), n)).string();
        const int fd = ::open(backup.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno == EEXIST) continue;
        if (fd < 0) {
            throwError(ErrorKind::Io, fmt::format("{} {}: cannot create {} to keep what the restart cuts: {}", role,
                                                  path, backup, std::strerror(errno)));
        }
        try {
            std::vector<std::byte> chunk(std::size_t{1} << 20);
            for (std::uint64_t at = from;;) {
                const std::size_t got = file.readAt(at, chunk);
                if (got == 0) break;
                for (std::size_t done = 0; done < got;) {
                    const ssize_t w = ::write(fd, chunk.data() + done, got - done);
                    if (w < 0 && errno == EINTR) continue;
                    if (w <= 0) {
                        throwError(ErrorKind::Io, fmt::format("{} {}: cannot write {}: {}", role, path, backup,
                                                              std::strerror(w < 0 ? errno : ENOSPC)));
                    }
                    done += static_cast<std::size_t>(w);
                }
                at += got;
            }
            if (::fsync(fd) != 0) {
                throwError(ErrorKind::Io,
                           fmt::format("{} {}: cannot sync {}: {}", role, path, backup, std::strerror(errno)));
            }
        } catch (...) {
            ::close(fd);
            ::unlink(backup.c_str());
            throw;
        }
        ::close(fd);
        return backup;
    }
    throwError(ErrorKind::InvalidInput,
               fmt::format("{} {}: #{}.cut.1# ... #{}.cut.99# exist, so what the restart would cut cannot be "
                           "kept; remove old ones",
                           role, path, p.filename().string(), p.filename().string()));
}

}  // namespace haloex::md
