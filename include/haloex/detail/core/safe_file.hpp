#pragma once
// Output files that are written without damaging anything: no partial file
// is ever left under the name the user gave, no file the program does not own
// (a device node, a directory, the target of a planted symbolic link) is
// replaced or written through, and a path that cannot be written is found
// before the work starts rather than after it.
//
//   AtomicFileWriter / writeFileAtomically: the new contents go to a
//     temporary created exclusively (O_CREAT|O_EXCL|O_NOFOLLOW, a random name
//     in the target's directory, so a planted file or link under that name
//     cannot be used), are fsync'ed, and are renamed onto the target, which
//     must be a regular file or not exist; then the directory is fsync'ed.
//     On every failure the temporary is removed and the target is untouched.
//     commitKeepingPrevious() also keeps the file it replaces under a second
//     name (a checkpoint's ".prev") by renames only: no step leaves two names
//     on one file, and no step writes through a link planted at either name.
//   RecordFile: an output that grows by whole records (trajectory frames):
//     each record is one write, and a failed write is truncated back, so the
//     file never ends in a torn record. It holds a write lock on its file
//     (lockForWriting): a second run opening it is refused, naming the first.
//   requireWritableOutput / requireWritableOutputDirectory: the checks a run
//     makes on its output paths before its first step.
//   fileIdentity / sameFile: whether two paths name the same file, resolved
//     through symbolic links (st_dev/st_ino for existing files, the resolved
//     parent directory and the name otherwise).
//
// All errors are haloex::Error (Io or InvalidInput) naming the path, the
// option or role (`what`, e.g. "--json" or "checkpoint"), the reason and what
// to do.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace haloex {

class AtomicFileWriter {
public:
    // Checks `path` (a regular file or a new name in an existing, writable
    // directory) and creates the temporary. `what` names the file in errors.
    AtomicFileWriter(std::string path, std::string what);
    AtomicFileWriter(const AtomicFileWriter&) = delete;
    AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
    ~AtomicFileWriter();  // removes the temporary unless commit() succeeded

    // Writes all bytes to the temporary (Io on failure, e.g. a full disk).
    void write(std::span<const std::byte> bytes);
    void write(std::string_view text);
    // fsync, close, checks the target again, renames the temporary onto it
    // and fsyncs the directory. After an exception the temporary is gone and
    // the target untouched.
    void commit();
    // commit(), keeping the file it replaces under `previousPath` (a
    // checkpoint's "<path>.prev"). Once the new contents are durable: where
    // `path` exists, the two are exchanged (renameat2 RENAME_EXCHANGE), so
    // that `path` always names a complete file, and the old one, now under
    // the temporary's random name, is renamed onto `previousPath` (a rename
    // replaces whatever is there, a planted link included, without following
    // it). Where the file system cannot exchange (EINVAL, ENOSYS: some network
    // file systems): `path` is renamed onto `previousPath`, then the
    // temporary onto `path` (in between only `previousPath` holds the old
    // file). Returns why the previous file could not be kept (empty: it was,
    // or there was none); the new file is in place either way. Throws as
    // commit() when the new file cannot be put in place.
    std::string commitKeepingPrevious(const std::string& previousPath);

    const std::string& path() const { return path_; }
    const std::string& temporaryPath() const { return tmpPath_; }

private:
    // fsync the temporary, check the target again; returns whether it exists.
    bool seal();
    // After the temporary was renamed: close it (its lock goes), sync the directory.
    void finish() noexcept;
    void discard() noexcept;
    std::string path_, what_, tmpPath_;
    int fd_ = -1;
    bool committed_ = false;
};

// For writers that create their file themselves (HDF5): a random name for a
// temporary next to `path`, as AtomicFileWriter's ("<name>.tmp.<16 hex
// digits>"), to be created exclusively (O_CREAT|O_EXCL, HDF5's H5F_ACC_EXCL,
// which never follows a link), and the rename of that file onto `path` once it
// is complete (`path` a regular file or nothing, as commit() checks; the
// directory fsync'ed).
std::string temporaryPathFor(const std::string& path);
void renameIntoPlace(const std::string& temporary, const std::string& path, const std::string& what);

// The whole contents at once (JSON summaries, .gro files, text inputs).
void writeFileAtomically(const std::string& path, std::string_view contents, const std::string& what);

class RecordFile {
public:
    enum class Mode { Truncate, Append };
    // Opens (or creates) `path` without following a symbolic link and without
    // blocking on a FIFO; refuses anything but a regular file. Truncate
    // empties it, Append keeps what is there.
    RecordFile(std::string path, std::string what, Mode mode);
    RecordFile(const RecordFile&) = delete;
    RecordFile& operator=(const RecordFile&) = delete;
    ~RecordFile();

    // Appends one record with one write (repeated only for a short write).
    // On failure the file is truncated back to its previous end and Io is
    // thrown: the file holds whole records only.
    void append(std::string_view record);
    const std::string& path() const { return path_; }

    // For continuing a file across runs (md::OutputFiles): its length now,
    // cutting it back to `length` (no longer than it is), and reading what
    // was written (up to bytes.size() bytes at `offset`; returns how many).
    std::uint64_t size() const;
    void truncate(std::uint64_t length);
    std::size_t readAt(std::uint64_t offset, std::span<std::byte> bytes) const;
    // Whether the open file is the one with this device and inode number.
    bool isFile(dev_t device, ino_t inode) const;

private:
    std::string path_, what_;
    int fd_ = -1;
};

// The checks before a run: `path` can be created or replaced as a regular
// file. Refuses (naming `what`): an empty path, a missing parent directory or
// a parent that is not a directory, a path that is a directory, a symbolic
// link or another non-regular file (device, FIFO, socket), and a directory
// where no file can be created (found by creating and removing a temporary
// there, which also catches read-only file systems).
void requireWritableOutput(const std::string& what, const std::string& path);
// `dir` is a directory the run may create files in, or can be created: the
// nearest existing ancestor must be a writable directory, and `dir` itself no
// symbolic link (its files would be written wherever the link points).
void requireWritableOutputDirectory(const std::string& what, const std::string& dir);
// Refuses (InvalidInput, naming `what`, the link and its target) a `path`
// whose last component is a symbolic link.
void requireNotALink(const std::string& what, const std::string& path);

// Takes this process's write lock (fcntl F_SETLK, F_WRLCK) on the whole open
// file `fd`, which `path` names (`what` names it in errors): so that a second
// run with the same output is refused, naming the first. Throws InvalidInput
// naming the PID of the process that holds a lock on it (on NFS, possibly a
// process on another host). A file system without locks (ENOLCK, ...) is no
// error: the file is then not locked. POSIX record locks belong to the
// process and go when it closes any descriptor of the file: keep `fd` open,
// and open the file nowhere else, while the lock is needed. RecordFile locks
// its file so; AtomicFileWriter its temporary, until it is renamed.
void lockForWriting(int fd, const std::string& what, const std::string& path);

// Removes the temporaries an AtomicFileWriter (or temporaryPathFor) left for
// `path` when its process was killed: regular files named "<name>.tmp.<16
// hex digits>" next to it that no process holds locked (a writer holds its
// temporary locked until it is renamed). Not while this process writes one
// (its own lock does not stop it). Returns the paths removed.
std::vector<std::string> removeStaleTemporaries(const std::string& path);

// A file's identity, resolved through symbolic links.
struct FileIdentity {
    bool exists = false;
    dev_t device = 0;
    ino_t inode = 0;
    std::string resolvedPath;  // absolute, symbolic links of the existing part resolved
};
FileIdentity fileIdentity(const std::string& path);
// Whether `a` and `b` name the same file: the same device and inode where
// both exist, else the same resolved path.
bool sameFile(const std::string& a, const std::string& b);

}  // namespace haloex
