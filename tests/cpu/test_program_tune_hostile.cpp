// `tandem tune -- CMD` against hostile programs, folders and option values (docs/RELIABILITY.md,
// docs/SECURITY.md): each test is one of the reproducers of a hostile sweep, which crashed, hung,
// lost data or wrote where it should not before its fix.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "test_preload_paths.h"
#include "test_run_contract_shell.h"

namespace {

namespace fs = std::filesystem;
using tandem_run_contract_test::Result;
using tandem_run_contract_test::run_shell;
using tandem_run_contract_test::sh_quoted;
using tandem_test::read_text;
using tandem_test::ScratchFolder;
using Clock = std::chrono::steady_clock;

const std::string kTandem = tandem_preload_test::tandem_path();

// `tandem tune OPTIONS -- PROGRAM` run in `dir` (under timeout(1): a hang fails the test, not CI).
Result tune(const ScratchFolder& dir, const std::string& options, const std::string& program) {
  return run_shell("cd " + sh_quoted(dir.str()) + " && timeout -s KILL 120 " + sh_quoted(kTandem) + " tune " + options +
                   " -- " + program);
}

bool one_line(const std::string& text) { return !text.empty() && text.find('\n') == text.size() - 1; }

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

bool gone_within(pid_t pid, double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (alive(pid) && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return !alive(pid);
}

TEST(program_tune_hostile, ALineOfFortyThousandCharactersBeforeTheMetricIsMeasured) {
  ScratchFolder dir;
  const Result r = tune(dir,
                        "--logs logs --rounds 1 --candidates priority -q --json r.json --metric "
                        "'.*\"step_ms_median\": ([0-9.]+)'",
                        "sh -c 'head -c 40000 /dev/zero | tr \"\\\\0\" x; echo \"\\\"step_ms_median\\\": 1.5\"'");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(read_text(dir.path("r.json")).find("\"metric_values\": [\n        1.5\n      ]"), std::string::npos);
}

TEST(program_tune_hostile, ACatastrophicPatternEndsAtOnce) {
  ScratchFolder dir;
  const auto start = Clock::now();
  const Result r = tune(dir, "--logs logs --rounds 1 --candidates priority --metric '^((?:a+)+)b'",
                        "awk 'BEGIN { for (i = 0; i < 2000; i++) printf \"a\"; print \"\" }'");
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 30);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("matched nothing in its output"), std::string::npos) << r.err;
}

TEST(program_tune_hostile, AFifoPlantedAsARunLogIsRefusedWithoutBlocking) {
  ScratchFolder dir;
  fs::create_directory(dir.path("logs"));
  fs::permissions(dir.path("logs"), fs::perms::owner_all);
  ASSERT_EQ(::mkfifo(dir.path("logs/round1-baseline.log").c_str(), 0600), 0);
  const Result r = tune(dir, "--logs logs --rounds 1 --candidates priority", "true");
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("round1-baseline.log' is not a regular file"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(".cpp:"), std::string::npos) << r.err;  // a user's folder: no source location
}

TEST(program_tune_hostile, AHardLinkPlantedAsARunLogKeepsItsContent) {
  ScratchFolder dir;
  fs::create_directory(dir.path("logs"));
  fs::permissions(dir.path("logs"), fs::perms::owner_all);
  std::ofstream(dir.path("precious")) << "keep me\n";
  fs::create_hard_link(dir.path("precious"), dir.path("logs/round1-baseline.log"));
  const Result r = tune(dir, "--logs logs --rounds 1 --candidates priority -q", "echo run");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(read_text(dir.path("precious")), "keep me\n");
  EXPECT_EQ(read_text(dir.path("logs/round1-baseline.log")), "run\n");
}

TEST(program_tune_hostile, TheLogsFolderFollowsTheRendezvousRules) {
  ScratchFolder dir;
  fs::create_directory(dir.path("open"));
  fs::permissions(dir.path("open"), fs::perms::all);  // 0777: anyone could plant files
  Result r = tune(dir, "--logs open --rounds 1 --candidates priority", "true");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("--logs folder '" + dir.path("open").string() + "' has mode 777"), std::string::npos) << r.err;
  fs::create_directory_symlink(dir.path("elsewhere"), dir.path("link"));
  fs::create_directory(dir.path("elsewhere"));
  r = tune(dir, "--logs link --rounds 1 --candidates priority", "true");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("is a symbolic link"), std::string::npos) << r.err;
  // A folder made with the usual umask (0755) is fine: others can read it, not write to it.
  fs::create_directory(dir.path("mine"));
  fs::permissions(dir.path("mine"), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                        fs::perms::others_read | fs::perms::others_exec);
  r = tune(dir, "--logs mine --rounds 1 --candidates priority -q", "true");
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST(program_tune_hostile, OutputsThatCannotBeWrittenAreRefusedBeforeAnyRun) {
  ScratchFolder dir;
  const std::string long_name(250, 'n');  // fits NAME_MAX, its temporary name ".NAME.tmp.XXXXXX" does not
  struct Case {
    std::string options, expected;
  } cases[] = {
      {"-o x --json x", "--out and --json name the same file"},
      {"-o x --json ./x", "--out and --json name the same file"},
      {"-o " + long_name, "is too long"},
      {"--json " + long_name, "is too long"},
      {"--metric ''", "--metric: is empty"},
      {"--rounds 0x3", "--rounds: is not a decimal number: 0x3"},
      {"--timeout 0x10", "--timeout: is not a decimal number"},
  };
  for (const Case& c : cases) {
    const Result r = tune(dir, "--logs logs --candidates priority " + c.options, "touch ran");
    EXPECT_NE(r.status, 0) << c.options;  // 1, or CLI11's status for a value it refuses
    EXPECT_TRUE(one_line(r.err)) << c.options << ": " << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.options << ": " << r.err;
    EXPECT_FALSE(fs::exists(dir.path("ran"))) << c.options << ": the program ran";
  }
}

TEST(program_tune_hostile, OutputsThroughALinkedFolderAreOneFile) {
  ScratchFolder dir;
  fs::create_directory(dir.path("d"));
  fs::create_directory_symlink("d", dir.path("l"));
  const Result r = tune(dir, "--logs logs --candidates priority -o d/best --json l/best", "touch ran");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("--out and --json name the same file 'l/best'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.path("ran")));
  EXPECT_FALSE(fs::exists(dir.path("d/best")));
}

TEST(program_tune_hostile, HexadecimalValuesAreNotNumbers) {
  ScratchFolder dir;
  const Result r = tune(dir, "--logs logs --rounds 1 --candidates priority --metric 'v=(\\S+)'", "echo v=0x1f");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--metric captured '0x1f', not a number"), std::string::npos) << r.err;
}

// 1e400 is written as a number but no double holds it: the run fails, naming it, rather than being
// valued by the others (-0 and 5: 2.5) as if it had printed only those (issue 38, item 19).
TEST(program_tune_hostile, AValueBeyondADoubleFailsTheRun) {
  ScratchFolder dir;
  const Result r = tune(dir, "--logs logs --rounds 1 --candidates priority --metric 'v=(\\S+)'",
                        "sh -c 'echo v=1e400; echo v=-0; echo v=5'");
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("--metric captured '1e400', not a finite number"), std::string::npos) << r.err;
}

TEST(program_tune_hostile, AMissingTmpdirIsNamed) {
  ScratchFolder dir;
  const Result r = run_shell("cd " + sh_quoted(dir.str()) + " && TMPDIR=/nonexistent/tmp " + sh_quoted(kTandem) +
                             " tune --rounds 1 --candidates priority -- true");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("TMPDIR='/nonexistent/tmp'"), std::string::npos) << r.err;
}

// 200 MB of output redrawn with '\r' (a progress bar): read in bounded memory, not held whole.
TEST(program_tune_hostile, CarriageReturnOutputIsReadInBoundedMemory) {
  ScratchFolder dir;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::chdir(dir.str().c_str()) != 0) ::_exit(99);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    ::execl(kTandem.c_str(), "tandem", "tune", "--logs", "logs", "--rounds", "1", "--candidates", "priority",
            "--metric", "v=(x)", "--", "sh", "-c", "yes 'progress 12345 v=1' | tr '\\n' '\\r' | head -c 200000000",
            static_cast<char*>(nullptr));
    ::_exit(97);
  }
  int status = 0;
  rusage usage{};
  ASSERT_EQ(::wait4(pid, &status, 0, &usage), pid);
  // The metric captures 'x', never a number: every line is read, and the baseline fails on it.
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
  EXPECT_LT(usage.ru_maxrss, 400 * 1024) << "KiB at most in tandem or a process it waited for";
}

// While alive, this process is a subreaper: an orphan of the tree it starts comes to it rather than
// to the machine's init. Some inits (a sandbox's, a container's) end orphans at once, which would
// pass a test of whether tandem ends them.
struct OrphansComeHere {
  OrphansComeHere() { ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }
  ~OrphansComeHere() {
    ::prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  }
};

// A worker that leaves the run's process group (setsid) still ends with the run: at the time limit,
// and when the program exits and leaves it behind.
TEST(program_tune_hostile, WorkersInTheirOwnSessionEndWithTheRun) {
  const OrphansComeHere orphans_come_here;
  ScratchFolder dir;
  const std::string d = sh_quoted(dir.str());
  // The baseline leaves a worker behind and exits; the candidate starts another and hangs until the
  // time limit.
  const std::string program = "sh -c 'setsid sleep 60 & echo $! > " + d +
                              "/left-${TANDEM_POLICY:-baseline}; if [ -n \"$TANDEM_POLICY\" ]; then setsid sleep 61 & "
                              "echo $! > " +
                              d + "/hung; wait; fi'";
  const Result r = tune(dir, "--logs logs --rounds 1 --timeout 3 --candidates priority", program);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("timed out after 3 s"), std::string::npos) << r.out;
  for (const char* name : {"left-baseline", "left-priority", "hung"}) {
    const pid_t worker = static_cast<pid_t>(std::atoi(read_text(dir.path(name)).c_str()));
    ASSERT_GT(worker, 0) << name;
    EXPECT_TRUE(gone_within(worker, 10)) << name << ": the worker outlived its run";
    if (alive(worker)) {
      ::kill(worker, SIGKILL);
      ::waitpid(worker, nullptr, 0);
    }
  }
}

}  // namespace
