// `tandem run` under the hostile sweep's reproducers (docs/RELIABILITY.md, docs/SECURITY.md):
// signals that used to kill it and orphan the program, a stats file deleted before the program
// started, error lines that echoed control characters, and a preload path the loader would expand.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include "test_preload_paths.h"
#include "test_run_contract_shell.h"

namespace {

namespace fs = std::filesystem;
using tandem_run_contract_test::Result;
using tandem_run_contract_test::run_shell;
using tandem_run_contract_test::ScratchFolder;
using tandem_run_contract_test::sh_quoted;
using tandem_test::read_text;

const std::string kTandem = tandem_preload_test::tandem_path();

std::string tandem_run(const std::string& options, const std::string& command) {
  return sh_quoted(kTandem) + " run " + options + " -- " + command;
}

bool one_printable_line(const std::string& text) {
  if (text.empty() || text.find('\n') != text.size() - 1) return false;
  for (unsigned char c : text)
    if (c < 0x20 && c != '\n') return false;
  return true;
}

// Sent to `tandem run` alone, each reaches the program, which decides (here: it reports and exits 7);
// none ends `tandem run` with the program left running.
TEST(run_contract_hostile, SignalsSentToTandemRunArePassedOn) {
  // A shell cannot trap a signal that was ignored when it started: run under nohup (SIGHUP ignored),
  // or by a harness that ignores others, this test must not hand the ignoring on to its shells, or the
  // program would never see the signal and loop until the test's time limit.
  for (int s : {SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE, SIGTERM, SIGHUP}) std::signal(s, SIG_DFL);
  for (const std::string signal : {"USR1", "USR2", "ALRM", "PIPE", "TERM", "HUP"}) {
    const Result r =
        run_shell(tandem_run("--log-level error", "sh -c 'trap \"echo got " + signal + "; exit 7\" " + signal +
                                                      "; kill -" + signal + " $PPID; while :; do sleep 0.05; done'"));
    EXPECT_EQ(r.status, 7) << signal << ": " << r.err;
    EXPECT_EQ(r.out, "got " + signal + "\n") << signal;
  }
}

// `tandem run --log-level info ... 2>&1 | true`: the lines tandem prints before the program starts
// go to a pipe without a reader; the program still runs and its status is returned.
TEST(run_contract_hostile, InfoLinesIntoAClosedPipeDoNotStopTheStart) {
  ScratchFolder scratch;
  const std::string ran = scratch.path("ran").string(), status = scratch.path("status").string();
  run_shell("{ sleep 0.2; " + tandem_run("--log-level info", "sh -c 'touch " + sh_quoted(ran) + "; exit 3'") +
            " 2>&1; echo $? > " + sh_quoted(status) + "; } | true");
  EXPECT_TRUE(fs::exists(ran)) << "the program never started";
  EXPECT_EQ(read_text(status), "3\n");
}

// The sweep's reproducer: a program killed before its exit report, with --stats naming a file an
// earlier run left. The file stays as it was, and tandem run says why it is not this run's.
TEST(run_contract_hostile, AnEarlierStatsFileSurvivesAProgramKilledBeforeItsReport) {
  ScratchFolder scratch;
  const std::string keep = scratch.path("keep.json").string();
  std::ofstream(keep) << "{\"earlier\": true}\n";
  const Result r =
      run_shell("cd " + sh_quoted(scratch.str()) + " && " + tandem_run("--stats keep.json", "sh -c 'kill -9 $$'"));
  EXPECT_EQ(r.status, 128 + 9) << r.err;
  EXPECT_EQ(read_text(keep), "{\"earlier\": true}\n");
  EXPECT_NE(r.err.find("warning: --stats '" + keep + "' still holds an earlier run's statistics"), std::string::npos)
      << r.err;
}

TEST(run_contract_hostile, APidInTheStatsFolderIsRefused) {
  ScratchFolder scratch;
  fs::create_directory(scratch.path("%p"));  // present now, but the interposer would write to /<pid>/
  const Result r =
      run_shell(tandem_run("--stats " + scratch.path("%p/s.json").string(), "touch " + scratch.path("ran").string()));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(one_printable_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("%p (the process id) may appear in the file's name only"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(scratch.path("ran")));
}

// A command that cannot be executed: one printable line, whatever its name holds.
TEST(run_contract_hostile, CannotExecuteIsOnePrintableLine) {
  const Result escapes = run_shell(tandem_run("", "\"$(printf 'no\\033[31msuch\\nprogram')\""));
  EXPECT_EQ(escapes.status, 127);
  EXPECT_TRUE(one_printable_line(escapes.err)) << escapes.err;
  EXPECT_NE(escapes.err.find("tandem run: cannot execute 'no\\x1b[31msuch\\nprogram': No such file"), std::string::npos)
      << escapes.err;
  const Result huge = run_shell(tandem_run("", "\"$(head -c 131072 /dev/zero | tr '\\0' x)\""));
  EXPECT_EQ(huge.status, 126);  // ENAMETOOLONG: found, not executable
  EXPECT_TRUE(one_printable_line(huge.err)) << huge.err.size();
  EXPECT_LT(huge.err.size(), 1000u);
}

// The loader expands $LIB, $ORIGIN and $PLATFORM in LD_PRELOAD: the file checked would not be the file
// loaded. Even a path whose literal spelling exists is refused.
TEST(run_contract_hostile, APreloadPathWithADollarIsRefused) {
  ScratchFolder scratch;
  for (const std::string token : {"$LIB", "$ORIGIN", "${PLATFORM}"}) {
    const fs::path folder = scratch.path("t/" + token);
    fs::create_directories(folder);
    fs::copy_file(tandem_preload_test::preload_library_path(), folder / "libtandem_preload.so",
                  fs::copy_options::overwrite_existing);
    const Result r = run_shell("TANDEM_PRELOAD_LIB=" + sh_quoted((folder / "libtandem_preload.so").string()) + " " +
                               tandem_run("", "touch " + scratch.path("ran").string()));
    EXPECT_EQ(r.status, 1) << token;
    EXPECT_TRUE(one_printable_line(r.err)) << r.err;
    EXPECT_NE(r.err.find("contains a '$'"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(scratch.path("ran"))) << token;
  }
}

}  // namespace
