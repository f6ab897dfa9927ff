// Files tandem writes and reads where other users may write too (tandem/safe_file.h): what a
// planted link, folder, FIFO or device does to a write or a read.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "scratch_folder.h"
#include "tandem/error.h"
#include "tandem/safe_file.h"

namespace {

namespace fs = std::filesystem;

using tandem_test::read_text;

class SafeFile : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // Nothing but `expected` in the folder: no temporary file left behind.
  void expect_only(std::initializer_list<std::string> expected) const {
    size_t n = 0;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      ++n;
      EXPECT_NE(std::find(expected.begin(), expected.end(), entry.path().filename().string()), expected.end())
          << "left behind: " << entry.path();
    }
    EXPECT_EQ(n, expected.size());
  }
  tandem_test::ScratchFolder scratch_;
  const fs::path dir_ = scratch_.dir();
};

TEST_F(SafeFile, ANewFileOverAHardLinkLeavesTheOtherNameAlone) {
  // A log name that is a second name of someone's file: removed and made anew, never truncated.
  { std::ofstream(path("theirs")) << "keep"; }
  ASSERT_EQ(::link(path("theirs").c_str(), path("run.log").c_str()), 0);
  const int fd = tandem::open_new_file(path("run.log"), 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "new", 3), 3);
  ::close(fd);
  EXPECT_EQ(read_text(path("theirs")), "keep");
  EXPECT_EQ(read_text(path("run.log")), "new");
}

TEST_F(SafeFile, WritesNewAndReplacesExistingFiles) {
  EXPECT_EQ(tandem::try_write_file_atomically(path("out.json"), "first"), "");
  EXPECT_EQ(read_text(path("out.json")), "first");
  EXPECT_EQ(tandem::try_write_file_atomically(path("out.json"), std::string(100000, 'x')), "");
  EXPECT_EQ(read_text(path("out.json")), std::string(100000, 'x'));
  expect_only({"out.json"});
}

TEST_F(SafeFile, ModeFollowsTheUmaskAsOpenWould) {
  const mode_t old = umask(027);
  const std::string error = tandem::try_write_file_atomically(path("m"), "x");
  umask(old);
  ASSERT_EQ(error, "");
  struct stat st {};
  ASSERT_EQ(stat(path("m").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST_F(SafeFile, PlantedLinkIsRefusedAndItsTargetUntouched) {
  const std::string victim = path("victim");
  std::ofstream(victim) << "precious";
  fs::create_symlink(victim, path("stats.json"));
  const std::string error = tandem::try_write_file_atomically(path("stats.json"), "overwrite");
  EXPECT_NE(error.find("symbolic link"), std::string::npos) << error;
  EXPECT_NE(error.find(path("stats.json")), std::string::npos) << error;
  EXPECT_EQ(read_text(victim), "precious");
  EXPECT_NE(tandem::why_not_writable(path("stats.json")), "");
  expect_only({"victim", "stats.json"});
}

TEST_F(SafeFile, FolderIsNeverReplaced) {
  fs::create_directory(path("results"));
  const std::string error = tandem::try_write_file_atomically(path("results"), "x");
  EXPECT_NE(error.find("is a folder"), std::string::npos) << error;
  EXPECT_TRUE(fs::is_directory(path("results")));
  EXPECT_NE(tandem::why_not_writable(path("results")).find("is a folder"), std::string::npos);
}

TEST_F(SafeFile, FifoIsNeitherWrittenNorWaitedFor) {
  ASSERT_EQ(mkfifo(path("fifo").c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(tandem::try_write_file_atomically(path("fifo"), "x").find("not a regular file"), std::string::npos);
  EXPECT_THROW(tandem::read_small_regular_file(path("fifo"), 1024), tandem::Error);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST_F(SafeFile, MissingOrReadOnlyFolderIsNamedBeforeAnyWork) {
  const std::string in_missing = path("no/such/folder/out.json");
  EXPECT_NE(tandem::why_not_writable(in_missing).find("'" + path("no/such/folder") + "'"), std::string::npos)
      << tandem::why_not_writable(in_missing);
  EXPECT_THROW(tandem::require_writable(in_missing, "--json"), tandem::Error);
  EXPECT_EQ(tandem::why_not_writable(path("fine.json")), "");
  if (geteuid() != 0) {  // root writes anywhere
    fs::create_directory(path("ro"));
    fs::permissions(path("ro"), fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_NE(tandem::why_not_writable(path("ro/out.json")).find("not writable"), std::string::npos);
  }
  EXPECT_FALSE(fs::exists(path("fine.json"))) << "the check must create nothing";
}

// Outputs not written yet are one file when their folders resolve to one: "d/x" and "l/x" with l a
// link to d, or "l/../d/x" (the link's parent, not l's).
TEST_F(SafeFile, OutputsThroughALinkedFolderAreOneFile) {
  fs::create_directory(dir_ / "d");
  fs::create_directory(dir_ / "d" / "sub");
  fs::create_directory_symlink(dir_ / "d", dir_ / "l");
  fs::create_directory_symlink(dir_ / "d" / "sub", dir_ / "deep");
  const auto refusal = [](const std::string& a, const std::string& b) {
    try {
      tandem::require_writable_outputs({{"--out", a}, {"--json", b}});
    } catch (const tandem::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refusal(path("d/best"), path("l/best")).find("--out and --json name the same file"), std::string::npos);
  EXPECT_NE(refusal(path("l/best"), path("d/./best")).find("name the same file"), std::string::npos);
  EXPECT_NE(refusal(path("deep/../best"), path("d/best")).find("name the same file"), std::string::npos);
  EXPECT_EQ(refusal(path("d/best"), path("l/other")), "");
  EXPECT_EQ(refusal(path("deep/../best"), path("best")), "");  // deep/.. is d, not the scratch folder
  expect_only({"d", "l", "deep"});
}

// A shared folder with the sticky bit (/tmp) owned by someone else, holding another user's file: the rename
// at the end of a run would fail (EPERM; root passes it, and would take the other user's file), so the name
// is refused before any work. Our own file there, and another user's in a sticky folder of ours, are fine.
TEST_F(SafeFile, AnotherUsersFileInAStickySharedFolderIsRefusedBeforeAnyWork) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give files to other users";
  const fs::path shared = dir_ / "shared";
  fs::create_directory(shared);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  // Root in a user namespace may have no other user to give files to.
  if (::chown(shared.c_str(), 65534, 65534) != 0) GTEST_SKIP() << "cannot give a folder to another user here";
  std::ofstream(shared / "theirs") << "another user's results\n";
  ASSERT_EQ(::chown((shared / "theirs").c_str(), 65533, 65533), 0);
  std::ofstream(shared / "mine") << "mine\n";
  const std::string why = tandem::why_not_writable((shared / "theirs").string());
  EXPECT_NE(why.find("it belongs to another user in a shared folder"), std::string::npos) << why;
  EXPECT_EQ(tandem::why_not_writable((shared / "mine").string()), "");
  EXPECT_EQ(tandem::why_not_writable((shared / "new").string()), "");
  EXPECT_THROW(tandem::require_writable_outputs(
                   {{"--json", (shared / "new").string()}, {"--out", (shared / "theirs").string()}}),
               tandem::Error);
  EXPECT_EQ(read_text(shared / "theirs"), "another user's results\n");
  // The folder's own owner may replace any file in it; without the sticky bit anyone who may write may.
  ASSERT_EQ(::chown(shared.c_str(), ::geteuid(), ::getegid()), 0);
  EXPECT_EQ(tandem::why_not_writable((shared / "theirs").string()), "");
  ASSERT_EQ(::chown(shared.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 0777), 0);
  EXPECT_EQ(tandem::why_not_writable((shared / "theirs").string()), "");
}

TEST_F(SafeFile, ReadsRegularFilesWithinTheBound) {
  std::ofstream(path("policy")) << "shape:3+priority\n";  // 17 bytes
  EXPECT_EQ(tandem::read_small_regular_file(path("policy"), 64), "shape:3+priority\n");
  EXPECT_EQ(tandem::read_small_regular_file(path("policy"), 17), "shape:3+priority\n");  // exactly the bound
  fs::create_symlink(path("policy"), path("link"));
  EXPECT_EQ(tandem::read_small_regular_file(path("link"), 64), "shape:3+priority\n");
  try {
    tandem::read_small_regular_file(path("policy"), 8);
    ADD_FAILURE() << "a file over the bound was read";
  } catch (const tandem::Error& e) {
    EXPECT_NE(std::string(e.what()).find("larger than 8 bytes"), std::string::npos) << e.what();
  }
}

TEST_F(SafeFile, DevicesAndFoldersAreRefusedAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(tandem::read_small_regular_file("/dev/zero", 1 << 20), tandem::Error);
  EXPECT_THROW(tandem::read_small_regular_file(dir_.string(), 1 << 20), tandem::Error);
  EXPECT_THROW(tandem::read_small_regular_file(path("absent"), 1 << 20), tandem::Error);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST_F(SafeFile, ProcFilesThatGrowPastTheirSizeAreBounded) {
  // /proc files report size 0 and deliver more: the bound holds on what is read, not on st_size.
  EXPECT_THROW(tandem::read_small_regular_file("/proc/self/maps", 16), tandem::Error);
}

// tandem::Error names where it was thrown by the file's base name and line: " [safe_file.cpp:N]".
TEST_F(SafeFile, ErrorsNameTheSourceFileByItsBaseName) {
  try {
    tandem::write_file_atomically(path("folder-missing/x"), "x");
    FAIL() << "no error";
  } catch (const tandem::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cannot create a file in '" + path("folder-missing") + "'"), std::string::npos) << what;
    EXPECT_NE(what.find(" [safe_file.cpp:"), std::string::npos) << what;
    EXPECT_EQ(what.back(), ']');
    EXPECT_GT(e.line(), 0);
  }
}

}  // namespace
