// The one child-process module of `tandem run` and `tandem tune -- CMD` (process/child_process.h):
// what a child inherits, how signals are passed on or end a run, time limits, descendants.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "default_dispositions.h"
#include "process/child_process.h"
#include "scratch_folder.h"

namespace {

using tandem::process::ChildOptions;
using tandem::process::OnSignal;
using tandem::process::SignalPlan;
using tandem::process::Supervisor;
using tandem_test::read_text;
using tandem_test::ScratchFolder;

SignalPlan interrupting() {
  SignalPlan plan;
  plan.signals = {{SIGINT, OnSignal::Interrupt}, {SIGTERM, OnSignal::Interrupt}};
  plan.subreaper = true;
  return plan;
}

ChildOptions shell(const std::string& script) {
  ChildOptions o;
  o.argv = {"/bin/sh", "-c", script};
  o.own_process_group = true;
  o.end_descendants = true;
  o.grace_s = 1;
  return o;
}

TEST(child_process, ExitStatusesAndExecFailures) {
  Supervisor supervisor(interrupting());
  EXPECT_EQ(supervisor.run(shell("exit 3")).exit_status, 3);
  EXPECT_EQ(supervisor.run(shell("kill -USR1 $$")).exit_status, 128 + SIGUSR1);
  ChildOptions missing;
  missing.argv = {"/nonexistent/program"};
  const auto r = supervisor.run(missing);
  EXPECT_EQ(r.exit_status, 127);
  EXPECT_TRUE(r.exec_failed);
  EXPECT_FALSE(supervisor.run(shell("exit 127")).exec_failed);  // the program's own 127
}

// Between runs an interrupt is recorded for the caller; a second one ends the process its default way.
TEST(child_process, InterruptsBetweenRunsAreRecordedThenFatal) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Supervisor supervisor(interrupting());
    ::kill(::getpid(), SIGINT);
    if (!supervisor.interrupted() || supervisor.interrupting_signal() != SIGINT ||
        !tandem::process::interrupt_pending())
      ::_exit(2);
    ::kill(::getpid(), SIGTERM);  // the second: default action
    ::_exit(3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
}

TEST(child_process, AnInterruptDuringARunEndsItsWholeTree) {
  ScratchFolder dir;
  Supervisor supervisor(interrupting());
  std::thread sender([] {
    sigset_t all;  // the signal must reach the waiting thread, as in tandem (single-threaded)
    sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ::kill(::getpid(), SIGINT);
  });
  const auto r = supervisor.run(shell("setsid sleep 30 & echo $! > " + dir.path("worker").string() +
                                      "; trap 'exit 5' INT; while :; do sleep 0.05; done"));
  sender.join();
  EXPECT_EQ(r.interrupted_by, SIGINT);
  EXPECT_EQ(r.exit_status, 5);  // the program shut down its own way
  const pid_t worker = static_cast<pid_t>(std::atoi(read_text(dir.path("worker")).c_str()));
  ASSERT_GT(worker, 0);
  EXPECT_NE(::kill(worker, 0), 0) << "a worker in its own session outlived the interrupted run";
}

TEST(child_process, ATimeLimitEndsTheRunAfterAGracePeriod) {
  Supervisor supervisor(interrupting());
  ChildOptions o = shell("trap '' TERM; sleep 30");  // ignores the polite SIGTERM
  o.timeout_s = 0.3;
  const auto start = std::chrono::steady_clock::now();
  const auto r = supervisor.run(o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_status, 128 + SIGKILL);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10);
}

TEST(child_process, ForwardedSignalsReachTheProgram) {
  SignalPlan plan;
  plan.signals = {{SIGUSR1, OnSignal::Forward}};
  Supervisor supervisor(plan);
  ChildOptions o;
  o.argv = {"/bin/sh", "-c", "trap 'exit 9' USR1; kill -USR1 $PPID; while :; do sleep 0.05; done"};
  EXPECT_EQ(supervisor.run(o).exit_status, 9);
}

TEST(child_process, TheChildGetsThePidVariableAndTheInheritedDispositions) {
  ScratchFolder dir;
  SignalPlan plan;
  plan.signals = {{SIGINT, OnSignal::Ignore}, {SIGTERM, OnSignal::Forward}};
  Supervisor supervisor(plan);
  ChildOptions o;
  o.argv = {"/bin/sh", "-c",
            "echo \"$ROOT $$\" > " + dir.path("pid").string() + "; grep SigIgn /proc/self/status > " +
                dir.path("ign").string()};
  o.environment = std::vector<std::string>{"ROOT=stale", "PATH=/usr/bin:/bin"};
  o.pid_variable = "ROOT";
  EXPECT_EQ(supervisor.run(o).exit_status, 0);
  const std::string pids = read_text(dir.path("pid"));
  const size_t space = pids.find(' ');
  EXPECT_EQ(pids.substr(0, space), pids.substr(space + 1, pids.size() - space - 2)) << pids;
  // SIGINT was ignored by the supervisor during the run, not by the program: nothing ignored.
  EXPECT_EQ(read_text(dir.path("ign")), "SigIgn:\t0000000000000000\n");
}

}  // namespace
