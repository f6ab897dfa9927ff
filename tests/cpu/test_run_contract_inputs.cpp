// `tandem run` checks what it is given before the program starts, and the interposer reads nothing:
// a policy file is read once, bounded, by `tandem run` (never by the interposer in each process, at
// exit, after a chdir, from a FIFO or /dev/zero); the stats path must be a writable file; the
// library to preload must be tandem's interposer.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "preload/config.h"
#include "tandem/policy.h"
#include "tandem/run_contract.h"
#include "test_preload_paths.h"
#include "test_run_contract_shell.h"

namespace {

namespace fs = std::filesystem;
using tandem_run_contract_test::Result;
using tandem_run_contract_test::run_shell;
using tandem_run_contract_test::ScratchFolder;
using tandem_run_contract_test::sh_quoted;

const std::string kTandem = tandem_preload_test::tandem_path();
const std::string kLibrary = tandem_preload_test::preload_library_path();

// Every command is bounded: a hang fails the test (status 124) instead of stalling the suite.
std::string bounded(const std::string& command) { return "timeout 20 " + command; }

std::string tandem_run(const std::string& options, const std::string& command) {
  return bounded(sh_quoted(kTandem) + " run " + options + " -- " + command);
}

std::string preloaded(const std::string& variables, const std::string& command) {
  return bounded("env LD_PRELOAD=" + sh_quoted(kLibrary) + " " + variables + " " + command);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

size_t lines(const std::string& text) { return count(text, "\n"); }

// ----- the interposer reads no file --------------------------------------------------------------

TEST(run_contract_policy, InterposerGivenAtDevZeroExitsAtOnce) {
  const Result r = run_shell(preloaded("TANDEM_POLICY=@/dev/zero TANDEM_LOG_LEVEL=info", "/bin/true"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count(r.err, "TANDEM_POLICY='@/dev/zero' names a file"), 1u) << r.err;
}

TEST(run_contract_policy, InterposerGivenAFifoWithoutWriterExitsAtOnce) {
  ScratchFolder scratch;
  const std::string fifo = scratch.path("fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const Result r = run_shell(preloaded("TANDEM_POLICY=@" + sh_quoted(fifo) + " TANDEM_ROOT_PID=$$", "/bin/true"));
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST(run_contract_policy, ConfigurationRefusesAFileNameWithoutReadingIt) {
  for (const char* value : {"@/dev/zero", " @relative.policy", "@"}) {
    const tandem::preload::PreloadConfig c = tandem::preload::parse_config(
        [&](const char* name) -> std::optional<std::string> {
          if (std::string(name) == "TANDEM_POLICY") return std::string(value);
          return std::nullopt;
        },
        1);
    EXPECT_FALSE(c.policy_valid) << value;
    EXPECT_FALSE(c.controls_active()) << value;
    ASSERT_EQ(c.problems.size(), 1u) << value;
    EXPECT_EQ(c.problems[0].level, tandem::preload::LogLevel::Error);
    EXPECT_NE(c.problems[0].message.find("names a file"), std::string::npos) << c.problems[0].message;
  }
}

// A readable policy file is refused too: the interposer in each process would read it again, after
// the program changed directory or consumed its stdin.
TEST(run_contract_policy, InterposerNeverAppliesAPolicyFile) {
  ScratchFolder scratch;
  std::ofstream(scratch.path("p")) << "shape:3\n";
  const Result r = run_shell(
      preloaded("TANDEM_POLICY=@" + sh_quoted(scratch.path("p").string()) + " TANDEM_LOG_LEVEL=info", "/bin/true"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count(r.err, "names a file, running with no controls"), 1u) << r.err;
  EXPECT_NE(r.err.find("invalid: no controls"), std::string::npos) << r.err;
}

// ----- tandem run reads @FILE once and passes the policy text --------------------------------------

TEST(run_contract_policy, PolicyFileBecomesCanonicalTextBeforeTheProgramMoves) {
  ScratchFolder scratch;
  std::ofstream(scratch.path("tuned.policy")) << "# tuned\n  priority + shape:3  \n";
  const Result r =
      run_shell("cd " + sh_quoted(scratch.str()) + " && " +
                tandem_run("--log-level error --policy @tuned.policy", "sh -c 'cd / && echo \"$TANDEM_POLICY\"'"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "shape:3+priority\n");
}

TEST(run_contract_policy, PolicyTextIsPassedInCanonicalForm) {
  const Result r =
      run_shell(tandem_run("--log-level error --policy ' priority+shape:48KiB '", "sh -c 'echo \"$TANDEM_POLICY\"'"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "shape:48KiB+priority\n");
}

TEST(run_contract_policy, StdinRedirectedFromAFileIsReadOnce) {
  ScratchFolder scratch;
  std::ofstream(scratch.path("p")) << "shape:2\n";
  const Result r =
      run_shell(tandem_run("--log-level error --policy @/dev/stdin", "sh -c 'echo \"$TANDEM_POLICY\"; cat'") + " < " +
                sh_quoted(scratch.path("p").string()));
  EXPECT_EQ(r.status, 0) << r.err;
  // The policy, then the program's stdin, still whole: tandem read the file through its own open.
  EXPECT_EQ(r.out, "shape:2\nshape:2\n");
}

void expect_refused_before_running(const Result& r, const std::string& fragment) {
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.status, 124) << "timed out";
  EXPECT_EQ(r.out, "") << "the program ran";
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}

TEST(run_contract_policy, DevZeroIsRefusedBeforeTheProgramStarts) {
  expect_refused_before_running(run_shell(tandem_run("--policy @/dev/zero", "echo ran")),
                                "policy file '/dev/zero' is not a regular file");
}

TEST(run_contract_policy, FifoIsRefusedBeforeTheProgramStarts) {
  ScratchFolder scratch;
  const std::string fifo = scratch.path("fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_refused_before_running(run_shell(tandem_run("--policy @" + sh_quoted(fifo), "echo ran")),
                                "is not a regular file");
}

TEST(run_contract_policy, ProcessSubstitutionIsRefusedNotIgnored) {
  if (run_shell("command -v bash").status != 0) GTEST_SKIP() << "bash not installed";
  const std::string line = tandem_run("--policy @<(echo shape:3)", "echo ran");
  expect_refused_before_running(run_shell("bash -c " + sh_quoted(line)), "is not a regular file");
}

TEST(run_contract_policy, OversizedPolicyFileIsRefused) {
  ScratchFolder scratch;
  std::ofstream(scratch.path("big")) << std::string(100 * 1024, '#') << "\nshape:3\n";
  expect_refused_before_running(
      run_shell(tandem_run("--policy @" + sh_quoted(scratch.path("big").string()), "echo ran")), "larger than");
}

TEST(run_contract_policy, PolicyFileWithAByteOrderMark) {
  ScratchFolder scratch;
  const std::string path = scratch.path("bom.policy").string();
  std::ofstream(path) << "\xEF\xBB\xBF# written on Windows\r\nshape:3+priority\r\n";
  EXPECT_EQ(tandem::to_string(tandem::load_policy_file(path)), "shape:3+priority");
  const Result r =
      run_shell(tandem_run("--log-level error --policy @" + sh_quoted(path), "sh -c 'echo \"$TANDEM_POLICY\"'"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "shape:3+priority\n");
}

// ----- the stats path ---------------------------------------------------------------------------

TEST(run_contract_stats, FolderIsRefusedAndKept) {
  ScratchFolder scratch;
  const fs::path folder = scratch.path("D");
  fs::create_directory(folder);
  expect_refused_before_running(run_shell(tandem_run("--stats " + sh_quoted(folder.string()), "echo ran")),
                                "is a folder");
  EXPECT_TRUE(fs::is_directory(folder));
  EXPECT_TRUE(fs::is_empty(folder));
}

TEST(run_contract_stats, MissingFolderIsRefusedBeforeTheRun) {
  ScratchFolder scratch;
  expect_refused_before_running(
      run_shell(tandem_run("--stats " + sh_quoted(scratch.path("no/such/stats.json").string()), "echo ran")),
      "--stats");
}

// Another user's file in a sticky shared folder (/tmp): the statistics could not replace it at the end of
// the run (EPERM), or, as root, would take it. Refused before the program runs, the file left as it was;
// the same for the outputs of `tandem run --timeline` and `tandem tune`.
TEST(run_contract_stats, AnotherUsersFileInAStickyFolderIsRefusedBeforeTheRun) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give files to other users";
  ScratchFolder scratch;
  const fs::path shared = scratch.path("shared");
  fs::create_directory(shared);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  // Root in a user namespace may have no other user to give files to.
  if (::chown(shared.c_str(), 65534, 65534) != 0) GTEST_SKIP() << "cannot give a folder to another user here";
  const std::string theirs = (shared / "results.json").string();
  std::ofstream(theirs) << "theirs\n";
  ASSERT_EQ(::chown(theirs.c_str(), 65533, 65533), 0);
  for (const std::string& options : {"--stats " + sh_quoted(theirs), "--timeline --trace " + sh_quoted(theirs),
                                     "--timeline --timeline-json " + sh_quoted(theirs)}) {
    SCOPED_TRACE(options);
    expect_refused_before_running(run_shell(tandem_run(options, "echo ran")),
                                  "it belongs to another user in a shared folder");
  }
  const Result tune = run_shell(bounded(sh_quoted(kTandem) + " tune -q --rounds 1 --candidates priority -o " +
                                        sh_quoted(theirs) + " -- echo ran"));
  EXPECT_NE(tune.status, 0);
  EXPECT_NE(tune.err.find("it belongs to another user in a shared folder"), std::string::npos) << tune.err;
  EXPECT_EQ(tandem_test::read_text(theirs), "theirs\n");
}

TEST(run_contract_stats, LinkIsRefusedAndItsTargetKept) {
  ScratchFolder scratch;
  std::ofstream(scratch.path("target")) << "keep";
  fs::create_symlink(scratch.path("target"), scratch.path("link"));
  expect_refused_before_running(
      run_shell(tandem_run("--stats " + sh_quoted(scratch.path("link").string()), "echo ran")), "symbolic link");
  EXPECT_EQ(tandem_run_contract_test::read_text(scratch.path("target")), "keep");
}

// The interposer itself, told to write into a folder (no `tandem run` to check first): the program
// is unaffected, the folder kept, one warning.
TEST(run_contract_stats, InterposerNeverReplacesAFolder) {
  ScratchFolder scratch;
  const fs::path folder = scratch.path("D");
  fs::create_directory(folder);
  const Result r = run_shell(
      preloaded("TANDEM_STATS_FILE=" + sh_quoted(folder.string()) + " TANDEM_ROOT_PID=$$", "sh -c 'exec true'"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::is_directory(folder));
}

// ----- the library to preload -------------------------------------------------------------------

void expect_library_refused(const std::string& path, const std::string& why) {
  const Result r = run_shell("TANDEM_PRELOAD_LIB=" + sh_quoted(path) + " " + tandem_run("", "echo ran"));
  expect_refused_before_running(r, why);
  EXPECT_NE(r.err.find("TANDEM_PRELOAD_LIB='" + path + "'"), std::string::npos) << r.err;
}

TEST(run_contract_library, TextFileIsRefused) { expect_library_refused("/etc/passwd", "is not an ELF file"); }

TEST(run_contract_library, AnotherSharedLibraryIsRefused) {
  const std::string fake_driver =
      (fs::path(tandem_preload_test::fake_driver_client_path()).parent_path() / "libcuda.so.1").string();
  expect_library_refused(fake_driver, "not tandem's interposer: it does not export dlsym");
}

// glibc's libc (2.34 and later) exports dlsym and dlerror itself, as another interposer would: exporting
// those two is not being tandem's. Preloaded, it would run the program with no control at all.
TEST(run_contract_library, ALibraryExportingDlsymAndDlerrorIsNotEnough) {
  Dl_info error_info{}, dlsym_info{};
  ASSERT_NE(::dladdr(reinterpret_cast<void*>(&::dlerror), &error_info), 0);
  ASSERT_NE(::dladdr(reinterpret_cast<void*>(&::dlsym), &dlsym_info), 0);
  // libc.so.6 (libdl.so.2 before glibc 2.34): the one library that defines both.
  const std::string libc = error_info.dli_fname;
  ASSERT_EQ(libc, dlsym_info.dli_fname);
  expect_library_refused(libc,
                         std::string("not tandem's interposer: it does not export ") + tandem::preload::kHookNames[0]);
}

// An interposer of an older build, which lacks the newest hook (the last of the list): preloaded, it would
// leave those calls unseen. A copy of tandem's own with that one name spelled otherwise in its tables.
TEST(run_contract_library, AnInterposerWithoutOneHookIsRefused) {
  const std::string newest = std::end(tandem::preload::kHookNames)[-1];
  std::ifstream in(kLibrary, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string name = newest + '\0';
  std::string other = name;
  other[other.size() - 2] ^= 0x20;  // the last letter's case changed
  size_t replaced = 0;
  for (size_t at = bytes.find(name); at != std::string::npos; at = bytes.find(name, at + name.size()), ++replaced)
    bytes.replace(at, name.size(), other);
  ASSERT_GT(replaced, 0u) << newest << " not found in " << kLibrary;
  ScratchFolder scratch;
  const std::string old_build = scratch.path("libtandem_preload.so").string();
  std::ofstream(old_build, std::ios::binary) << bytes;
  expect_library_refused(old_build, "not tandem's interposer: it does not export " + newest);
}

TEST(run_contract_library, ProgramIsRefused) {
  expect_library_refused(tandem_preload_test::tandem_path(), "does not export");
}

// An ELF header of another class or architecture, written byte by byte (ELF specification).
std::string elf_header(unsigned char elf_class, uint16_t machine) {
  std::string h(64, '\0');
  h[0] = 0x7f, h[1] = 'E', h[2] = 'L', h[3] = 'F';
  h[4] = static_cast<char>(elf_class);
  h[5] = 1;   // little-endian
  h[6] = 1;   // EV_CURRENT
  h[16] = 3;  // ET_DYN
  h[18] = static_cast<char>(machine & 0xff);
  h[19] = static_cast<char>(machine >> 8);
  return h;
}

TEST(run_contract_library, ThirtyTwoBitLibraryIsRefused) {
  ScratchFolder scratch;
  std::ofstream(scratch.path("lib32.so"), std::ios::binary) << elf_header(1, 3);  // ELFCLASS32, EM_386
  expect_library_refused(scratch.path("lib32.so").string(), "is a 32-bit library");
}

TEST(run_contract_library, ForeignArchitectureIsRefused) {
  ScratchFolder scratch;
#if defined(__aarch64__)
  const uint16_t other = 62;  // EM_X86_64
#else
  const uint16_t other = 183;  // EM_AARCH64
#endif
  std::ofstream(scratch.path("foreign.so"), std::ios::binary) << elf_header(2, other);
  expect_library_refused(scratch.path("foreign.so").string(), "another architecture");
}

// The library `tandem run` finds beside itself (<bin>/../lib) is checked the same way.
TEST(run_contract_library, FoundLibraryIsCheckedToo) {
  ScratchFolder scratch;
  fs::create_directories(scratch.path("bin"));
  fs::create_directories(scratch.path("lib"));
  fs::copy_file(kTandem, scratch.path("bin/tandem"));
  fs::copy_file("/etc/passwd", scratch.path("lib/libtandem_preload.so"));
  const Result r = run_shell("env -u TANDEM_PRELOAD_LIB " +
                             bounded(sh_quoted(scratch.path("bin/tandem").string()) + " run -- echo ran"));
  expect_refused_before_running(r, "is not an ELF file");
  EXPECT_NE(r.err.find(scratch.path("lib/libtandem_preload.so").string()), std::string::npos) << r.err;
}

}  // namespace
