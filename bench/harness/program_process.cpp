#include "harness/program_process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>

#include "tandem/error.h"

namespace tandem::bench {
namespace {

using Clock = std::chrono::steady_clock;

// How long a run told to stop (timeout, interrupt) may take to shut down its own way (a launcher
// tearing down its workers, NCCL freeing its resources) before its process group is killed.
constexpr double kGraceSeconds = 5;

constexpr int kInterrupting[] = {SIGINT, SIGTERM, SIGHUP};

void write_all(int fd, const char* text) {
  size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = ::write(fd, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<size_t>(n);
  }
}

timespec to_timespec(double seconds) {
  if (seconds < 0) seconds = 0;
  timespec t{};
  t.tv_sec = static_cast<time_t>(seconds);
  t.tv_nsec = static_cast<long>((seconds - static_cast<double>(t.tv_sec)) * 1e9);
  return t;
}

double seconds_until(Clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - Clock::now()).count();
}

}  // namespace

struct ProgramSignals::Saved {
  sigset_t mask;                // the mask found, restored in the children and at the end
  struct sigaction sigchld {};  // SIGCHLD's disposition found (SIG_IGN would reap children for us)
  sigset_t interrupting;        // SIGINT, SIGTERM, SIGHUP unless they were ignored (nohup)
  sigset_t waited;              // those and SIGCHLD
};

ProgramSignals::ProgramSignals() : saved_(new Saved) {
  sigemptyset(&saved_->interrupting);
  for (int s : kInterrupting) {
    struct sigaction found {};
    ::sigaction(s, nullptr, &found);
    // An ignored signal stays ignored: `nohup tandem tune -- ...` survives SIGHUP.
    if (!(found.sa_handler == SIG_IGN && !(found.sa_flags & SA_SIGINFO))) sigaddset(&saved_->interrupting, s);
  }
  saved_->waited = saved_->interrupting;
  sigaddset(&saved_->waited, SIGCHLD);
  // Held, not handled: run_process takes them with sigtimedwait, so no handler races the wait.
  ::sigprocmask(SIG_BLOCK, &saved_->waited, &saved_->mask);
  struct sigaction dfl {};
  sigemptyset(&dfl.sa_mask);
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGCHLD, &dfl, &saved_->sigchld);
}

ProgramSignals::~ProgramSignals() {
  // Held signals are taken first: one that arrived after the last run must not kill tandem while it
  // reports what it finished.
  const timespec now{};
  while (::sigtimedwait(&saved_->waited, nullptr, &now) > 0) {
  }
  ::sigaction(SIGCHLD, &saved_->sigchld, nullptr);
  ::sigprocmask(SIG_SETMASK, &saved_->mask, nullptr);
  delete saved_;
}

bool ProgramSignals::interrupted() {
  const timespec now{};
  if (::sigtimedwait(&saved_->interrupting, nullptr, &now) > 0) interrupted_ = true;
  return interrupted_;
}

ProcessRun run_process(ProgramSignals& signals, const std::vector<std::string>& argv, const std::string& log_path,
                       double timeout_s) {
  TANDEM_REQUIRE(!argv.empty(), "no command to run");
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (log < 0) TANDEM_THROW("cannot write the run log '" + log_path + "': " + std::strerror(errno));
  const int null_input = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  std::vector<std::string> args = argv;
  std::vector<char*> c_args;
  for (auto& a : args) c_args.push_back(a.data());
  c_args.push_back(nullptr);
  const ProgramSignals::Saved& saved = *signals.saved_;

  std::fflush(nullptr);  // nothing buffered may be written twice
  const auto started = Clock::now();
  const pid_t child = ::fork();
  if (child == 0) {
    // Only async-signal-safe calls until exec. Its own process group: a timeout kills the whole tree,
    // and the terminal's Ctrl-C reaches tandem alone, which passes it on (see ProgramSignals).
    ::setpgid(0, 0);
    if (null_input >= 0) ::dup2(null_input, STDIN_FILENO);
    ::dup2(log, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    ::sigaction(SIGCHLD, &saved.sigchld, nullptr);
    ::sigprocmask(SIG_SETMASK, &saved.mask, nullptr);
    ::execvp(c_args[0], c_args.data());
    const int error = errno;
    write_all(STDERR_FILENO, "tandem tune: cannot execute '");
    write_all(STDERR_FILENO, c_args[0]);
    write_all(STDERR_FILENO, "': ");
    write_all(STDERR_FILENO, std::strerror(error));
    write_all(STDERR_FILENO, "\n");
    ::_exit(error == ENOENT ? 127 : 126);  // as shells report "not found" / "not executable"
  }
  const int fork_error = errno;
  ::close(log);
  if (null_input >= 0) ::close(null_input);
  TANDEM_REQUIRE(child > 0, std::string("fork failed: ") + std::strerror(fork_error));
  ::setpgid(child, child);  // also here: a signal sent before the child ran setpgid still reaches its group

  ProcessRun run;
  std::optional<Clock::time_point> deadline;
  if (timeout_s > 0)
    deadline = started + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  bool stopping = false;  // SIGTERM (or the interrupting signal) sent; SIGKILL at the deadline
  for (;;) {
    // WNOWAIT: an ended child stays a zombie until the kill below, so its pid, the id of its process
    // group, cannot have been given to another process when the group is killed.
    siginfo_t ended{};
    const int waited = ::waitid(P_PID, static_cast<id_t>(child), &ended, WEXITED | WNOHANG | WNOWAIT);
    if (waited == 0 && ended.si_pid == child) break;
    TANDEM_REQUIRE(waited == 0 || errno == EINTR, std::string("waitid failed: ") + std::strerror(errno));
    timespec left{};
    if (deadline) left = to_timespec(seconds_until(*deadline));
    const int signal = ::sigtimedwait(&saved.waited, nullptr, deadline ? &left : nullptr);
    if (signal == SIGCHLD || (signal < 0 && errno == EINTR)) continue;
    if (signal > 0) {  // an interrupting signal: passed on to the program, which may shut down its way
      signals.interrupted_ = true;
      if (!stopping) ::kill(-child, signal);
    } else if (!stopping) {  // the timeout
      run.timed_out = true;
      ::kill(-child, SIGTERM);
    } else {  // the grace period is over
      ::kill(-child, SIGKILL);
      deadline.reset();
      continue;
    }
    if (!stopping) {
      stopping = true;
      deadline =
          Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kGraceSeconds));
    }
  }
  run.wall_s = std::chrono::duration<double>(Clock::now() - started).count();
  // Workers the program left behind would run into the next measurement.
  ::kill(-child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  run.interrupted = signals.interrupted_;
  if (WIFEXITED(status))
    run.exit_status = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    run.exit_status = 128 + WTERMSIG(status);
  else
    run.exit_status = 1;
  return run;
}

}  // namespace tandem::bench
