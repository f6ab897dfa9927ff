// `tandem run` preserves the process contract: the program inherits the signal dispositions and
// the signal mask `tandem run` was given, its exit status is returned as is, and the interposer's
// summary on stderr never kills it (a pipe without a reader, a closed stderr).
#include <gtest/gtest.h>

#include <string>

#include "default_dispositions.h"
#include "test_preload_paths.h"
#include "test_run_contract_shell.h"

namespace {

using tandem_run_contract_test::Result;
using tandem_run_contract_test::run_shell;
using tandem_run_contract_test::ScratchFolder;
using tandem_run_contract_test::sh_quoted;

const std::string kTandem = tandem_preload_test::tandem_path();

// Not under timeout(1): it changes the dispositions its command inherits.
std::string tandem_run(const std::string& options, const std::string& command) {
  return sh_quoted(kTandem) + " run " + options + " -- " + command;
}

// The ignored and blocked signal sets of a program started directly and under `tandem run`, from a
// shell prepared by `setup` (which may ignore signals with `trap '' SIG`).
void expect_same_signal_state(const std::string& setup) {
  const std::string show = "grep -E '^Sig(Ign|Blk)' /proc/self/status";
  const Result direct = run_shell(setup + "; " + show);
  const Result under = run_shell(setup + "; " + tandem_run("--log-level error", show));
  ASSERT_EQ(direct.status, 0) << direct.err;
  ASSERT_EQ(under.status, 0) << under.err;
  EXPECT_NE(direct.out.find("SigIgn"), std::string::npos);
  EXPECT_EQ(under.out, direct.out) << setup;
}

TEST(run_contract_signals, DefaultDispositionsReachTheProgram) { expect_same_signal_state("true"); }

TEST(run_contract_signals, IgnoredSignalsStayIgnored) {
  expect_same_signal_state("trap '' HUP");
  expect_same_signal_state("trap '' INT QUIT");
  expect_same_signal_state("trap '' INT QUIT TERM HUP USR1");
}

TEST(run_contract_signals, BlockedSignalsStayBlocked) {
  if (run_shell("command -v python3").status != 0) GTEST_SKIP() << "python3 not installed";
  const std::string program =
      "import os, signal, sys\n"
      "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1, signal.SIGTERM, signal.SIGHUP})\n"
      "os.execvp(sys.argv[1], sys.argv[1:])\n";
  // grep is started directly: a shell may unblock signals when it starts.
  const std::string show = "grep -E '^SigBlk' /proc/self/status";
  const Result direct = run_shell("python3 -c " + sh_quoted(program) + " " + show);
  const Result under = run_shell("python3 -c " + sh_quoted(program) + " " + tandem_run("--log-level error", show));
  ASSERT_EQ(direct.status, 0) << direct.err;
  ASSERT_EQ(under.status, 0) << under.err;
  EXPECT_NE(direct.out.find("SigBlk:\t0000000000004201"), std::string::npos) << direct.out;  // HUP, USR1, TERM
  EXPECT_EQ(under.out, direct.out);
}

// `nohup tandem run -- job &`: the hang-up reaches tandem and the job, both ignore it.
TEST(run_contract_signals, NohupJobSurvivesAHangUp) {
  const Result r = run_shell("trap '' HUP; " + tandem_run("--log-level error",
                                                          "sh -c 'kill -HUP $PPID; sleep 0.3; "
                                                          "kill -HUP $$; echo alive'"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "alive\n");
}

TEST(run_contract_signals, IgnoredInterruptStaysIgnoredInTheProgram) {
  const Result r = run_shell("trap '' INT; " + tandem_run("--log-level error", "sh -c 'kill -INT $$; echo alive'"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "alive\n");
}

// Not ignored by the parent: SIGTERM to `tandem run` still reaches the program, which reports it.
TEST(run_contract_signals, TerminationIsForwarded) {
  const Result r = run_shell(tandem_run("--log-level error", "sh -c 'kill -TERM $PPID; sleep 5; echo missed'"));
  EXPECT_EQ(r.status, 128 + 15) << r.err;
  EXPECT_EQ(r.out, "");
}

// The summary goes to a pipe whose reader has exited: the program's status is still its own.
TEST(run_contract_signals, SummaryIntoAClosedPipeDoesNotKillTheProgram) {
  ScratchFolder scratch;
  const std::string status_file = scratch.path("status").string();
  run_shell("{ " + tandem_run("", "sh -c 'sleep 0.3; exec /bin/true'") + " 2>&1; echo $? > " + sh_quoted(status_file) +
            "; } | true");
  EXPECT_EQ(tandem_run_contract_test::read_text(status_file), "0\n");
}

TEST(run_contract_signals, SummaryWithStderrClosed) {
  const Result r = run_shell(tandem_run("", "sh -c 'exec 2>&-; exec true'"));
  EXPECT_EQ(r.status, 0) << r.err;
  const Result closed = run_shell(tandem_run("", "true") + " 2>&-");
  EXPECT_EQ(closed.status, 0);
}

TEST(run_contract_signals, ExitStatusesAreThePrograms) {
  EXPECT_EQ(run_shell(tandem_run("", "sh -c 'exit 3'")).status, 3);
  EXPECT_EQ(run_shell(tandem_run("", "sh -c 'kill -USR1 $$'")).status, 128 + 10);
}

}  // namespace
