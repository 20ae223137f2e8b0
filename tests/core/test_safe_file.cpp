// Output files written without damaging anything (haloex/detail/core/safe_file.hpp):
// atomic replacement only of regular files or new names, temporaries that a
// planted file cannot be substituted for and that never outlive a failure,
// records that are never torn, the checks a run makes on its paths, and path
// identity through links. Every test works as root (no permission bits: a
// path under a regular file, FIFOs, symbolic links, file-size limits).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "haloex/core/error.hpp"
#include "haloex/detail/core/safe_file.hpp"
#include "test_refusal.hpp"
#include "test_temp_dir.hpp"

using namespace haloex;
namespace fs = std::filesystem;

namespace {

fs::path freshDir() { return haloex::testing::freshTestDir("haloex_safe_file"); }

std::string contents(const fs::path& path) { return haloex::testing::fileContents(path); }
void writeText(const fs::path& path, const std::string& text) { haloex::testing::writeFileText(path, text); }

std::vector<std::string> filesIn(const fs::path& dir) { return haloex::testing::fileNamesIn(dir); }

using haloex::testing::errorMessageOf;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(SafeFile, WritesANewFileAndReplacesARegularOneKeepingItsMode) {
    const fs::path dir = freshDir();
    const fs::path path = dir / "out.json";
    writeFileAtomically(path.string(), "first\n", "--json");
    EXPECT_EQ(contents(path), "first\n");
    ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
    writeFileAtomically(path.string(), "second\n", "--json");
    EXPECT_EQ(contents(path), "second\n");
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0640u);
    EXPECT_EQ(filesIn(dir), (std::vector<std::string>{"out.json"}));
}

TEST(SafeFile, RefusesToReplaceADeviceFifoOrDirectoryAndLeavesThem) {
    const fs::path dir = freshDir();
    const fs::path fifo = dir / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
    ErrorKind kind = ErrorKind::Internal;
    std::string message = errorMessageOf([&] { writeFileAtomically(fifo.string(), "x", "checkpoint"); }, &kind);
    EXPECT_EQ(kind, ErrorKind::InvalidInput);
    EXPECT_TRUE(contains(message, "checkpoint " + fifo.string() + ": the path is a FIFO")) << message;
    EXPECT_TRUE(fs::is_fifo(fifo));

    const fs::path sub = dir / "sub";
    fs::create_directory(sub);
    message = errorMessageOf([&] { writeFileAtomically(sub.string(), "x", "--json"); });
    EXPECT_TRUE(contains(message, "the path is a directory; give a file name")) << message;
    EXPECT_TRUE(fs::is_directory(sub));

    // /dev/null as the target is refused before anything is created (as root
    // a rename would have replaced the device node with a regular file).
    message = errorMessageOf([&] { AtomicFileWriter writer("/dev/null", "checkpoint"); });
    EXPECT_TRUE(contains(message, "the path is a character device")) << message;
    struct stat st {};
    ASSERT_EQ(::stat("/dev/null", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_EQ(filesIn(dir), (std::vector<std::string>{"fifo", "sub"}));
}

TEST(SafeFile, DoesNotWriteThroughASymbolicLink) {
    const fs::path dir = freshDir();
    const fs::path victim = dir / "victim";
    writeText(victim, "precious");
    const fs::path link = dir / "out.gro";
    fs::create_symlink(victim, link);
    const std::string message = errorMessageOf([&] { writeFileAtomically(link.string(), "x", "--traj"); });
    EXPECT_TRUE(contains(message, "the path is a symbolic link")) << message;
    EXPECT_TRUE(contains(message, victim.string())) << message;
    EXPECT_EQ(contents(victim), "precious");
    EXPECT_TRUE(fs::is_symlink(link));
}

TEST(SafeFile, TemporaryNamesAreUnpredictableAndNeverFollowPlantedLinks) {
    const fs::path dir = freshDir();
    const fs::path victim = dir / "victim";
    writeText(victim, "precious");
    const fs::path path = dir / "state.cpt";
    // The names an attacker could predict: "<target>.tmp.<pid>" and friends.
    for (const std::string& suffix : std::vector<std::string>{".tmp." + std::to_string(::getpid()), ".tmp", "~"}) {
        fs::create_symlink(victim, path.string() + suffix);
    }
    AtomicFileWriter writer(path.string(), "checkpoint");
    const std::string tmp = fs::path(writer.temporaryPath()).filename().string();
    EXPECT_TRUE(tmp.starts_with("state.cpt.tmp.")) << tmp;
    EXPECT_EQ(tmp.size(), std::string("state.cpt.tmp.").size() + 16) << tmp;
    EXPECT_FALSE(fs::is_symlink(writer.temporaryPath()));
    writer.write("new contents");
    writer.commit();
    EXPECT_EQ(contents(victim), "precious");
    EXPECT_EQ(contents(path), "new contents");
    EXPECT_FALSE(fs::is_symlink(path));
}

TEST(SafeFile, EveryFailureRemovesTheTemporaryAndKeepsTheTarget) {
    const fs::path dir = freshDir();
    const fs::path path = dir / "run.json";
    writeText(path, "old");
    {
        AtomicFileWriter writer(path.string(), "--json");
        writer.write("new");
        // The target turns into a directory meanwhile: refused at the rename.
        fs::remove(path);
        fs::create_directory(path);
        const std::string message = errorMessageOf([&] { writer.commit(); });
        EXPECT_TRUE(contains(message, "the path is a directory")) << message;
    }
    EXPECT_EQ(filesIn(dir), (std::vector<std::string>{"run.json"}));
    fs::remove(path);
    writeText(path, "old");
    {
        AtomicFileWriter abandoned(path.string(), "--json");
        abandoned.write("half");
    }  // never committed: an exception elsewhere, for example
    EXPECT_EQ(filesIn(dir), (std::vector<std::string>{"run.json"}));
    EXPECT_EQ(contents(path), "old");
}

TEST(SafeFile, AFailedRecordIsTruncatedBackSoNoRecordIsTorn) {
    const fs::path dir = freshDir();
    const fs::path path = dir / "traj.gro";
    RecordFile file(path.string(), "--traj", RecordFile::Mode::Truncate);
    const std::string record(600, 'a');
    file.append(record);

    // A full disk, simulated by a file-size limit: the second record fits half.
    rlimit saved{};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
    auto* previousHandler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit small = saved;
    small.rlim_cur = 900;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    ErrorKind kind = ErrorKind::Internal;
    const std::string message = errorMessageOf([&] { file.append(std::string(600, 'b')); }, &kind);
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved), 0);
    std::signal(SIGXFSZ, previousHandler);

    EXPECT_EQ(kind, ErrorKind::Io) << message;
    EXPECT_TRUE(contains(message, "--traj " + path.string() + ": cannot append")) << message;
    EXPECT_EQ(contents(path), record);
    file.append("c");  // appends after the last whole record
    EXPECT_EQ(contents(path), record + "c");
}

TEST(SafeFile, RecordFilesRefuseWhatIsNotARegularFile) {
    const fs::path dir = freshDir();
    const fs::path fifo = dir / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
    // Would block forever on open(O_WRONLY) without a reader, were it not refused.
    std::string message = errorMessageOf([&] { RecordFile f(fifo.string(), "--traj", RecordFile::Mode::Append); });
    EXPECT_TRUE(contains(message, "the path is a FIFO")) << message;
    const fs::path victim = dir / "victim";
    writeText(victim, "precious");
    fs::create_symlink(victim, dir / "link");
    message = errorMessageOf([&] { RecordFile f((dir / "link").string(), "--traj", RecordFile::Mode::Truncate); });
    EXPECT_TRUE(contains(message, "the path is a symbolic link")) << message;
    EXPECT_EQ(contents(victim), "precious");
}

TEST(SafeFile, OutputChecksFindBadPathsAndCreateNothing) {
    const fs::path dir = freshDir();
    writeText(dir / "file", "x");
    ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
    fs::create_directory(dir / "sub");
    fs::create_symlink(dir / "file", dir / "link");
    struct Case {
        fs::path path;
        std::string expected;
    };
    const std::vector<Case> cases{
        {dir / "missing" / "out.json", "the directory '" + (dir / "missing").string() + "' does not exist"},
        // As root no directory is read-only; a path under a regular file fails for everyone.
        {dir / "file" / "out.json", "is not a directory"},
        {dir / "sub", "the path is a directory"},
        {dir / "fifo", "the path is a FIFO"},
        {dir / "link", "the path is a symbolic link"},
        {"/dev/null", "the path is a character device"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.path.string());
        const std::string message = errorMessageOf([&] { requireWritableOutput("--json", c.path.string()); });
        EXPECT_TRUE(contains(message, "--json " + c.path.string() + ": ")) << message;
        EXPECT_TRUE(contains(message, c.expected)) << message;
    }
    EXPECT_EQ(errorMessageOf([&] { requireWritableOutput("--json", ""); }), "--json: the file name is empty");
    requireWritableOutput("--json", (dir / "new.json").string());
    requireWritableOutput("--json", (dir / "file").string());
    requireWritableOutputDirectory("--write-gromacs", (dir / "a" / "b").string());
    requireWritableOutputDirectory("--write-gromacs", (dir / "sub").string());
    const std::string message =
        errorMessageOf([&] { requireWritableOutputDirectory("--write-gromacs", (dir / "file" / "b").string()); });
    EXPECT_TRUE(contains(message, "exists and is not a directory")) << message;
    EXPECT_EQ(filesIn(dir), (std::vector<std::string>{"fifo", "file", "link", "sub"}));
    EXPECT_TRUE(fs::is_empty(dir / "sub"));
}

TEST(SafeFile, SameFileSeesThroughLinksAndSpellings) {
    const fs::path dir = freshDir();
    writeText(dir / "a", "x");
    writeText(dir / "b", "x");
    fs::create_symlink(dir / "a", dir / "link-to-a");
    fs::create_hard_link(dir / "a", dir / "hard-a");
    fs::create_directory(dir / "real");
    fs::create_directory_symlink(dir / "real", dir / "alias");
    EXPECT_TRUE(sameFile((dir / "a").string(), (dir / "link-to-a").string()));
    EXPECT_TRUE(sameFile((dir / "a").string(), (dir / "hard-a").string()));
    EXPECT_TRUE(sameFile((dir / "a").string(), (dir / "real" / ".." / "a").string()));
    EXPECT_FALSE(sameFile((dir / "a").string(), (dir / "b").string()));
    // Files that do not exist yet: the same name in the same (resolved) directory.
    EXPECT_TRUE(sameFile((dir / "real" / "new.json").string(), (dir / "alias" / "new.json").string()));
    EXPECT_TRUE(sameFile((dir / "new.json").string(), (dir / "." / "new.json").string()));
    EXPECT_FALSE(sameFile((dir / "real" / "new.json").string(), (dir / "real" / "other.json").string()));
    EXPECT_FALSE(sameFile((dir / "a").string(), (dir / "new.json").string()));
    // Relative and absolute spellings.
    const fs::path cwd = fs::current_path();
    fs::current_path(dir);
    EXPECT_TRUE(sameFile("a", (dir / "a").string()));
    EXPECT_TRUE(sameFile("new.json", (dir / "new.json").string()));
    fs::current_path(cwd);
}
