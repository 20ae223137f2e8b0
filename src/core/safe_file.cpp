#include "haloex/detail/core/safe_file.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <random>
#include <string_view>

#include "haloex/core/error.hpp"
#include "haloex/detail/core/test_hooks.hpp"

namespace haloex {
namespace {

namespace fs = std::filesystem;

std::string systemError(int error) { return std::strerror(error); }

std::string directoryOf(const std::string& path) {
    const fs::path parent = fs::path(path).parent_path();
    return parent.empty() ? std::string(".") : parent.string();
}

// 64 unpredictable bits: the temporary's name must not be guessable, or a
// link planted under it in a shared directory would be (tried to be) used.
std::uint64_t randomBits() {
    std::uint64_t value = 0;
    if (::getrandom(&value, sizeof value, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof value)) return value;
    std::random_device device;
    return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

// What a non-regular file is, for messages.
const char* kindOf(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISLNK(mode)) return "a symbolic link";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

[[noreturn]] void refuseTarget(const std::string& what, const std::string& path, mode_t mode) {
    std::string advice;
    if (S_ISDIR(mode)) {
        advice = fmt::format("give a file name, e.g. {}/{}", path, "output");
    } else if (S_ISLNK(mode)) {
        std::error_code ec;
        const fs::path target = fs::read_symlink(path, ec);
        advice = fmt::format("haloex does not write through links{}: give the file's own path, or remove the link",
                             ec ? std::string() : fmt::format(" (it points to '{}')", target.string()));
    } else {
        advice = "haloex writes only regular files: give a file name";
    }
    throwError(ErrorKind::InvalidInput, fmt::format("{} {}: the path is {}; {}", what, path, kindOf(mode), advice));
}

// The target of an atomic replacement: a regular file or nothing. Returns
// whether it exists (and its mode in `st`).
bool checkReplaceable(const std::string& what, const std::string& path, struct stat& st) {
    if (::lstat(path.c_str(), &st) != 0) {
        if (errno == ENOENT) return false;
        const int error = errno;
        if (error == ENOTDIR) {
            throwError(ErrorKind::Io, fmt::format("{} {}: a component of the path is not a directory; give a path in "
                                                  "an existing directory",
                                                  what, path));
        }
        throwError(ErrorKind::Io, fmt::format("{} {}: cannot inspect the path: {}", what, path, systemError(error)));
    }
    if (!S_ISREG(st.st_mode)) refuseTarget(what, path, st.st_mode);
    // A rename replaces a file whatever its mode: a write-protected one is
    // refused here, as opening it for writing refuses it (root included, for
    // whom permissions do not stop the open).
    if ((st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0) {
        throwError(ErrorKind::InvalidInput,
                   fmt::format("{} {}: the file is write-protected (mode {:04o}); haloex does not replace it: make it "
                               "writable (chmod u+w {}) or give another name",
                               what, path, st.st_mode & 07777, path));
    }
    return true;
}

struct Temporary {
    int fd = -1;
    std::string path;
};

constexpr std::size_t kTemporarySuffix = 5 + 16;  // ".tmp." and 16 hex digits

// The start of the names of `path`'s temporaries (its name, cut to fit NAME_MAX).
std::string temporaryBase(const std::string& path) {
    std::string base = fs::path(path).filename().string();
    if (base.size() + kTemporarySuffix > NAME_MAX) base.resize(NAME_MAX - kTemporarySuffix);
    return base;
}

struct flock wholeFile(short type) {
    struct flock lock {};
    lock.l_type = type;
    lock.l_whence = SEEK_SET;
    lock.l_start = 0;
    lock.l_len = 0;  // to the end, however long the file grows
    return lock;
}

// A new file next to `path`, created exclusively under a random name.
Temporary createTemporary(const std::string& what, const std::string& path) {
    const std::string dir = directoryOf(path);
    for (int attempt = 0; attempt < 64; ++attempt) {
        Temporary t;
        t.path = temporaryPathFor(path);
        // Read-write: a write lock needs a descriptor open for writing, and
        // removeStaleTemporaries opens it so too.
        t.fd = ::open(t.path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (t.fd >= 0) {
            // Locked while it exists: a temporary without a lock is a killed run's.
            struct flock lock = wholeFile(F_WRLCK);
            ::fcntl(t.fd, F_SETLK, &lock);
            return t;
        }
        if (errno == EEXIST) continue;  // taken (or planted): draw another name
        const int error = errno;
        std::string reason = systemError(error);
        if (error == ENOENT) reason = fmt::format("the directory '{}' does not exist; create it first", dir);
        if (error == ENOTDIR) reason = fmt::format("'{}' is not a directory", dir);
        if (error == EACCES || error == EPERM || error == EROFS) {
            reason += fmt::format(" (the directory '{}' is not writable: choose another one)", dir);
        }
        throwError(ErrorKind::Io, fmt::format("{} {}: cannot create a file in '{}': {}", what, path, dir, reason));
    }
    throwError(ErrorKind::Io, fmt::format("{} {}: cannot find a free temporary name in '{}'", what, path, dir));
}

// `failure` begins the message ("checkpoint run.cpt: cannot write 'run.cpt.tmp.…'").
void writeAll(int fd, const std::byte* data, std::size_t size, const std::string& failure) {
    while (size > 0) {
        const ssize_t n = ::write(fd, data, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int error = n < 0 ? errno : ENOSPC;
            throwError(ErrorKind::Io, fmt::format("{}: {}{}", failure, systemError(error),
                                                  error == ENOSPC || error == EDQUOT || error == EFBIG
                                                      ? " (is the disk, the quota or the file-size limit full?)"
                                                      : ""));
        }
        data += n;
        size -= static_cast<std::size_t>(n);
    }
}

void syncDirectory(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;  // durability of the rename only: the data itself is synced
    ::fsync(fd);
    ::close(fd);
}

// Test hook HALOEX_TEST_CRASH_IN_REPLACE=<point> (test builds only): the
// process kills itself (SIGKILL, as a node failure or kill -9 would) at that
// point of commitKeepingPrevious() when it replaces an existing file:
// "synced" (the new file durable, nothing renamed yet), "exchanged" (the new
// file in place, the old one under the temporary's name), "moved-aside" (the
// fallback without RENAME_EXCHANGE: the old file renamed to the previous
// copy's name, the new one not yet in place).
void crashPointForTests(std::string_view point) {
    const char* hook = testHook("HALOEX_TEST_CRASH_IN_REPLACE");
    if (hook != nullptr && point == hook) ::raise(SIGKILL);
}

// Test hook HALOEX_TEST_NO_RENAME_EXCHANGE=1: behave as on a file system
// without RENAME_EXCHANGE (EINVAL), to test the fallback.
int exchangeNames(const char* a, const char* b) {
    const char* hook = testHook("HALOEX_TEST_NO_RENAME_EXCHANGE");
    if (hook != nullptr && std::string_view(hook) == "1") {
        errno = EINVAL;
        return -1;
    }
    return ::renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
}

void probeDirectory(const std::string& what, const std::string& path) {
    Temporary t = createTemporary(what, path);
    ::close(t.fd);
    ::unlink(t.path.c_str());
}

}  // namespace

// ---- AtomicFileWriter ----------------------------------------------------------

AtomicFileWriter::AtomicFileWriter(std::string path, std::string what)
    : path_(std::move(path)), what_(std::move(what)) {
    if (path_.empty()) throwError(ErrorKind::InvalidInput, fmt::format("{}: the file name is empty", what_));
    struct stat st {};
    const bool exists = checkReplaceable(what_, path_, st);
    Temporary t = createTemporary(what_, path_);
    fd_ = t.fd;
    tmpPath_ = std::move(t.path);
    // The replacement keeps the permissions of the file it replaces.
    if (exists) ::fchmod(fd_, st.st_mode & 07777);
}

AtomicFileWriter::~AtomicFileWriter() {
    if (!committed_) discard();
}

void AtomicFileWriter::discard() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!tmpPath_.empty()) ::unlink(tmpPath_.c_str());
    tmpPath_.clear();
}

void AtomicFileWriter::write(std::span<const std::byte> bytes) {
    HALOEX_ASSERT(fd_ >= 0 && !committed_, "write after commit or after a failure");
    try {
        writeAll(fd_, bytes.data(), bytes.size(), fmt::format("{} {}: cannot write '{}'", what_, path_, tmpPath_));
    } catch (...) {
        discard();
        throw;
    }
}

void AtomicFileWriter::write(std::string_view text) { write(std::as_bytes(std::span(text.data(), text.size()))); }

bool AtomicFileWriter::seal() {
    // fsync reports every delayed write error (close would add none after it,
    // NFS included). The descriptor stays open, and with it the temporary's
    // lock, until the temporary is renamed (finish()): removeStaleTemporaries
    // of another run never takes it for a killed run's.
    if (::fsync(fd_) != 0) {
        throwError(ErrorKind::Io,
                   fmt::format("{} {}: cannot sync '{}' to disk: {}", what_, path_, tmpPath_, systemError(errno)));
    }
    // Again just before the rename: the target may have changed meanwhile.
    struct stat st {};
    return checkReplaceable(what_, path_, st);
}

void AtomicFileWriter::finish() noexcept {
    ::close(fd_);
    fd_ = -1;
    committed_ = true;
    tmpPath_.clear();
    syncDirectory(directoryOf(path_));
}

void AtomicFileWriter::commit() {
    HALOEX_ASSERT(fd_ >= 0 && !committed_, "commit after commit or after a failure");
    try {
        seal();
        if (::rename(tmpPath_.c_str(), path_.c_str()) != 0) {
            throwError(ErrorKind::Io,
                       fmt::format("{} {}: cannot rename '{}' to it: {}", what_, path_, tmpPath_, systemError(errno)));
        }
    } catch (...) {
        discard();
        throw;
    }
    finish();
}

std::string AtomicFileWriter::commitKeepingPrevious(const std::string& previousPath) {
    HALOEX_ASSERT(fd_ >= 0 && !committed_, "commit after commit or after a failure");
    std::string notKept;
    const auto why = [&](const std::string& step, int error) {
        return fmt::format("{} {}: the previous {} could not be kept as {} ({}: {})", what_, path_, what_, previousPath,
                           step, systemError(error));
    };
    try {
        const bool exists = seal();
        if (exists) crashPointForTests("synced");
        bool placed = false;
        if (exists && exchangeNames(tmpPath_.c_str(), path_.c_str()) == 0) {
            // `path_` names the new file; the old one is under the temporary's name.
            placed = true;
            crashPointForTests("exchanged");
            struct stat st {};
            if (::lstat(tmpPath_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
                // What was exchanged in was not a regular file (swapped in after the
                // check above): not kept.
                ::unlink(tmpPath_.c_str());
                notKept =
                    fmt::format("{} {}: the previous {} was {}, not kept", what_, path_, what_, kindOf(st.st_mode));
            } else if (::rename(tmpPath_.c_str(), previousPath.c_str()) != 0) {
                const int error = errno;
                ::unlink(tmpPath_.c_str());
                notKept = why(fmt::format("cannot rename '{}' to it", tmpPath_), error);
            }
        } else if (exists && errno != ENOENT) {
            const int exchangeError = errno;
            if (exchangeError != EINVAL && exchangeError != ENOSYS && exchangeError != EOPNOTSUPP) {
                throwError(ErrorKind::Io, fmt::format("{} {}: cannot exchange '{}' with it: {}", what_, path_, tmpPath_,
                                                      systemError(exchangeError)));
            }
            // No RENAME_EXCHANGE here: the old file moves aside first (for a moment
            // only `previousPath` holds it), then the new one takes its place.
            if (::rename(path_.c_str(), previousPath.c_str()) != 0) {
                notKept = why(fmt::format("cannot rename '{}' to it", path_), errno);
            } else {
                crashPointForTests("moved-aside");
            }
        }
        if (!placed && ::rename(tmpPath_.c_str(), path_.c_str()) != 0) {
            throwError(ErrorKind::Io,
                       fmt::format("{} {}: cannot rename '{}' to it: {}", what_, path_, tmpPath_, systemError(errno)));
        }
    } catch (...) {
        discard();
        throw;
    }
    finish();
    return notKept;
}

std::string temporaryPathFor(const std::string& path) {
    return (fs::path(directoryOf(path)) / fmt::format("{}.tmp.{:016x}", temporaryBase(path), randomBits())).string();
}

void renameIntoPlace(const std::string& temporary, const std::string& path, const std::string& what) {
    struct stat st {};
    checkReplaceable(what, path, st);
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
        throwError(ErrorKind::Io,
                   fmt::format("{} {}: cannot rename '{}' to it: {}", what, path, temporary, systemError(errno)));
    }
    syncDirectory(directoryOf(path));
}

void writeFileAtomically(const std::string& path, std::string_view contents, const std::string& what) {
    AtomicFileWriter file(path, what);
    file.write(contents);
    file.commit();
}

// ---- RecordFile -------------------------------------------------------------------

RecordFile::RecordFile(std::string path, std::string what, Mode mode) : path_(std::move(path)), what_(std::move(what)) {
    if (path_.empty()) throwError(ErrorKind::InvalidInput, fmt::format("{}: the file name is empty", what_));
    // O_NONBLOCK: opening a FIFO for writing would wait for a reader.
    // Read-write: a continued file's recorded end is checked by reading it back.
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd_ < 0) {
        const int error = errno;
        // A link (ELOOP), a FIFO without a reader (ENXIO), a directory (EISDIR)...
        struct stat st {};
        if (::lstat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) refuseTarget(what_, path_, st.st_mode);
        throwError(ErrorKind::Io, fmt::format("{} {}: cannot open for writing: {}", what_, path_, systemError(error)));
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
        const mode_t kind = st.st_mode;
        ::close(fd_);
        fd_ = -1;
        refuseTarget(what_, path_, kind);
    }
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
    // Before anything is cut: a file another run writes is refused untouched.
    try {
        lockForWriting(fd_, what_, path_);
    } catch (...) {
        ::close(fd_);
        fd_ = -1;
        throw;
    }
    if (mode == Mode::Truncate && ::ftruncate(fd_, 0) != 0) {
        const int error = errno;
        ::close(fd_);
        fd_ = -1;
        throwError(ErrorKind::Io, fmt::format("{} {}: cannot truncate: {}", what_, path_, systemError(error)));
    }
}

RecordFile::~RecordFile() {
    if (fd_ >= 0) ::close(fd_);
}

void RecordFile::append(std::string_view record) {
    const off_t end = ::lseek(fd_, 0, SEEK_END);
    if (end < 0) throwError(ErrorKind::Io, fmt::format("{} {}: cannot seek: {}", what_, path_, systemError(errno)));
    try {
        writeAll(fd_, reinterpret_cast<const std::byte*>(record.data()), record.size(),
                 fmt::format("{} {}: cannot append", what_, path_));
    } catch (...) {
        // No torn record: what was written of this one goes again.
        if (::ftruncate(fd_, end) == 0) ::lseek(fd_, end, SEEK_SET);
        throw;
    }
}

std::uint64_t RecordFile::size() const {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
        throwError(ErrorKind::Io, fmt::format("{} {}: cannot stat: {}", what_, path_, systemError(errno)));
    }
    return static_cast<std::uint64_t>(st.st_size);
}

void RecordFile::truncate(std::uint64_t length) {
    HALOEX_ASSERT(length <= size(), "RecordFile::truncate only cuts a file back");
    if (::ftruncate(fd_, static_cast<off_t>(length)) != 0) {
        throwError(ErrorKind::Io,
                   fmt::format("{} {}: cannot truncate to {} bytes: {}", what_, path_, length, systemError(errno)));
    }
}

bool RecordFile::isFile(dev_t device, ino_t inode) const {
    struct stat st {};
    return ::fstat(fd_, &st) == 0 && st.st_dev == device && st.st_ino == inode;
}

std::size_t RecordFile::readAt(std::uint64_t offset, std::span<std::byte> bytes) const {
    std::size_t got = 0;
    while (got < bytes.size()) {
        const ssize_t n = ::pread(fd_, bytes.data() + got, bytes.size() - got, static_cast<off_t>(offset + got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throwError(ErrorKind::Io, fmt::format("{} {}: cannot read: {}", what_, path_, systemError(errno)));
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    return got;
}

// ---- checks before a run ---------------------------------------------------------

void requireNotALink(const std::string& what, const std::string& path) {
    // The last component: "out/" names the directory out as "out" does.
    fs::path p = fs::path(path);
    if (p.filename().empty()) p = p.parent_path();
    struct stat st {};
    if (::lstat(p.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) refuseTarget(what, path, st.st_mode);
}

void requireWritableOutput(const std::string& what, const std::string& path) {
    if (path.empty()) throwError(ErrorKind::InvalidInput, fmt::format("{}: the file name is empty", what));
    struct stat st {};
    checkReplaceable(what, path, st);
    const std::string dir = directoryOf(path);
    if (::stat(dir.c_str(), &st) != 0) {
        const int error = errno;
        if (error == ENOENT) {
            throwError(ErrorKind::Io,
                       fmt::format("{} {}: the directory '{}' does not exist; create it first", what, path, dir));
        }
        if (error == ENOTDIR) {
            throwError(ErrorKind::Io, fmt::format("{} {}: '{}' is not a directory (a component of the path is a "
                                                  "file); give a path in an existing directory",
                                                  what, path, dir));
        }
        throwError(ErrorKind::Io, fmt::format("{} {}: cannot inspect '{}': {}", what, path, dir, systemError(error)));
    }
    if (!S_ISDIR(st.st_mode)) {
        throwError(ErrorKind::Io, fmt::format("{} {}: '{}' is not a directory; give a path in an existing directory",
                                              what, path, dir));
    }
    probeDirectory(what, path);
}

void requireWritableOutputDirectory(const std::string& what, const std::string& dir) {
    if (dir.empty()) throwError(ErrorKind::InvalidInput, fmt::format("{}: the directory name is empty", what));
    requireNotALink(what, dir);
    fs::path existing = fs::path(dir);
    struct stat st {};
    while (::stat(existing.c_str(), &st) != 0) {
        // ENOTDIR: a file on the way up, reported below as not a directory.
        if (errno != ENOENT && errno != ENOTDIR) {
            throwError(ErrorKind::Io,
                       fmt::format("{} {}: cannot use '{}': {}", what, dir, existing.string(), systemError(errno)));
        }
        const fs::path parent = existing.parent_path();
        existing = parent.empty() || parent == existing ? fs::path(".") : parent;
    }
    if (!S_ISDIR(st.st_mode)) {
        throwError(ErrorKind::Io, fmt::format("{} {}: '{}' exists and is not a directory; give a directory name", what,
                                              dir, existing.string()));
    }
    probeDirectory(what, (existing / "probe").string());
}

void lockForWriting(int fd, const std::string& what, const std::string& path) {
    // A holder that ends between the two calls frees the lock: try again.
    for (int attempt = 0; attempt < 100; ++attempt) {
        struct flock lock = wholeFile(F_WRLCK);
        if (::fcntl(fd, F_SETLK, &lock) == 0) return;
        if (errno != EAGAIN && errno != EACCES) return;  // no locks on this file system (ENOLCK, ...)
        struct flock holder = wholeFile(F_WRLCK);
        if (::fcntl(fd, F_GETLK, &holder) == 0 && holder.l_type != F_UNLCK) {
            throwError(ErrorKind::InvalidInput,
                       fmt::format("{} {}: another run (process {}) is writing this file: it holds its lock. Two runs "
                                   "writing one file interleave their records; wait for that run to end (or stop "
                                   "it), or give this run other output names",
                                   what, path, holder.l_pid));
        }
    }
    throwError(ErrorKind::Io,
               fmt::format("{} {}: cannot lock the file: it was locked and unlocked 100 times in a row; try again",
                           what, path));
}

std::vector<std::string> removeStaleTemporaries(const std::string& path) {
    std::vector<std::string> removed;
    const std::string prefix = temporaryBase(path) + ".tmp.";
    std::error_code ec;
    for (fs::directory_iterator it(directoryOf(path), ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.size() != prefix.size() + 16 || !name.starts_with(prefix) ||
            name.find_first_not_of("0123456789abcdef", prefix.size()) != std::string::npos) {
            continue;
        }
        // A regular file (O_NOFOLLOW: a link is never opened through) that no
        // process holds locked: its writer is gone.
        const int fd = ::open(it->path().c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) continue;
        struct stat st {};
        struct flock lock = wholeFile(F_WRLCK);
        if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::fcntl(fd, F_SETLK, &lock) == 0 &&
            ::unlink(it->path().c_str()) == 0) {
            removed.push_back(it->path().string());
        }
        ::close(fd);
    }
    std::sort(removed.begin(), removed.end());
    return removed;
}

FileIdentity fileIdentity(const std::string& path) {
    FileIdentity id;
    std::error_code ec;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
        id.exists = true;
        id.device = st.st_dev;
        id.inode = st.st_ino;
        id.resolvedPath = fs::canonical(path, ec).string();
        return id;
    }
    id.resolvedPath = fs::weakly_canonical(fs::absolute(path, ec), ec).string();
    if (ec) id.resolvedPath = fs::absolute(path).lexically_normal().string();
    return id;
}

bool sameFile(const std::string& a, const std::string& b) {
    const FileIdentity x = fileIdentity(a), y = fileIdentity(b);
    if (x.exists && y.exists) return x.device == y.device && x.inode == y.inode;
    if (x.exists != y.exists) return false;
    return x.resolvedPath == y.resolvedPath;
}

}  // namespace haloex
