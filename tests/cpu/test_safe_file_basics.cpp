// The basics of include/tandem/safe_file.h and of tandem::Error's location suffix: a write lands
// whole and replaces a regular file, refuses folders and links, and a read is bounded to exactly
// `max_bytes`.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tandem/error.h"
#include "tandem/safe_file.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

class SafeFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("safe_file_basics." + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string contents(const std::string& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  fs::path dir_;
};

TEST_F(SafeFile, WritesAndReplacesARegularFileLeavingNoTemporary) {
  const std::string p = path("out.json");
  EXPECT_EQ(try_write_file_atomically(p, "first"), "");
  EXPECT_EQ(contents(p), "first");
  EXPECT_EQ(try_write_file_atomically(p, "second, longer"), "");
  EXPECT_EQ(contents(p), "second, longer");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}), 1);
}

TEST_F(SafeFile, RefusesFoldersAndLinks) {
  fs::create_directory(path("folder"));
  EXPECT_EQ(try_write_file_atomically(path("folder"), "x"),
            "cannot write '" + path("folder") + "' is a folder; give a file name");
  EXPECT_TRUE(fs::is_directory(path("folder")));
  std::ofstream(path("target")) << "kept";
  fs::create_symlink(path("target"), path("link"));
  const std::string why = try_write_file_atomically(path("link"), "x");
  EXPECT_NE(why.find("is a symbolic link"), std::string::npos) << why;
  EXPECT_EQ(contents(path("target")), "kept");
  EXPECT_NE(why_not_writable(path("folder")), "");
  EXPECT_EQ(why_not_writable(path("new-file")), "");
}

TEST_F(SafeFile, ReadsAtMostMaxBytes) {
  std::ofstream(path("eight")) << "12345678";
  EXPECT_EQ(read_small_regular_file(path("eight"), 8), "12345678");  // exactly the bound
  EXPECT_THROW(read_small_regular_file(path("eight"), 7), Error);
  EXPECT_THROW(read_small_regular_file(dir_.string(), 100), Error);  // a folder
}

// tandem::Error names where it was thrown by the file's base name and line: " [safe_file.cpp:N]".
TEST_F(SafeFile, ErrorsNameTheSourceFileByItsBaseName) {
  try {
    write_file_atomically(path("folder-missing/x"), "x");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cannot create a file in '" + path("folder-missing") + "'"), std::string::npos) << what;
    EXPECT_NE(what.find(" [safe_file.cpp:"), std::string::npos) << what;
    EXPECT_EQ(what.back(), ']');
    EXPECT_GT(e.line(), 0);
  }
}

}  // namespace
}  // namespace tandem
