#include "run_child.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>

#include "tandem/error.h"
#include "tandem/run_contract.h"

extern char** environ;

namespace tandem::cli {
namespace {

volatile sig_atomic_t g_child = 0;

// SIGTERM and SIGHUP sent to `tandem run` (a job scheduler, a closed terminal) are passed on, so the
// program can shut down its own way; tandem then reports how it ended.
void forward_signal(int signal) {
  const int saved_errno = errno;
  if (g_child > 0) ::kill(static_cast<pid_t>(g_child), signal);
  errno = saved_errno;
}

// How `tandem run` treats each signal while the program runs, and what it restores afterwards and
// in the child before exec, so the program inherits exactly what `tandem run` inherited.
struct SignalPlan {
  int signal;
  bool forward;  // passed on to the program; else ignored by tandem while it waits
  struct sigaction inherited {};
};

// The child's environment: the parent's, minus the variables we change, plus their new values.
std::vector<std::string> build_environment(const std::vector<EnvChange>& changes) {
  std::vector<std::string> out;
  for (char** entry = environ; entry && *entry; ++entry) {
    const std::string variable = *entry;
    const std::string name = variable.substr(0, variable.find('='));
    bool changed = name == tandem::preload::env::kRootPid;
    for (const auto& change : changes) changed = changed || change.first == name;
    if (!changed) out.push_back(variable);
  }
  for (const auto& [name, value] : changes)
    if (value) out.push_back(name + "=" + *value);
  return out;
}

void write_all(int fd, const char* text) {
  size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = ::write(fd, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<size_t>(n);
  }
}

// In the child between fork and exec only async-signal-safe calls: the pid goes into a buffer that
// was allocated before fork. The inherited dispositions and mask are restored first, so the program
// starts with exactly what `tandem run` was given (an ignored SIGHUP under nohup stays ignored).
[[noreturn]] void exec_child(char* const* argv, char** envp, char* root_pid_entry, size_t digits_at,
                             const SignalPlan* plans, size_t plan_count, const sigset_t& inherited_mask) {
  char digits[24];
  int n = 0;
  for (long pid = static_cast<long>(::getpid()); pid > 0; pid /= 10) digits[n++] = static_cast<char>('0' + pid % 10);
  for (int i = 0; i < n; ++i) root_pid_entry[digits_at + i] = digits[n - 1 - i];
  root_pid_entry[digits_at + n] = '\0';
  for (size_t i = 0; i < plan_count; ++i) ::sigaction(plans[i].signal, &plans[i].inherited, nullptr);
  ::sigprocmask(SIG_SETMASK, &inherited_mask, nullptr);
  ::execvpe(argv[0], argv, envp);
  const int error = errno;
  write_all(STDERR_FILENO, "tandem run: cannot execute '");
  write_all(STDERR_FILENO, argv[0]);
  write_all(STDERR_FILENO, "': ");
  write_all(STDERR_FILENO, std::strerror(error));
  write_all(STDERR_FILENO, "\n");
  ::_exit(error == ENOENT ? 127 : 126);  // as shells report "not found" / "not executable"
}

}  // namespace

int run_child(const std::vector<std::string>& command, const std::vector<EnvChange>& environment) {
  TANDEM_REQUIRE(!command.empty(), "no command given: use `tandem run [options] -- CMD ARGS...`");
  std::vector<std::string> env_strings = build_environment(environment);
  std::string root_pid = std::string(tandem::preload::env::kRootPid) + "=";
  const size_t digits_at = root_pid.size();
  root_pid.resize(digits_at + 24, '\0');  // filled in by the child with its own pid

  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(root_pid.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = command;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  // Interactive interrupts reach the whole foreground process group, the program included: like
  // system(3), let the program decide and report how it ended, instead of dying first. A signal the
  // parent ignores is left ignored: no forwarder, so `nohup tandem run -- job` survives SIGHUP.
  SignalPlan plans[] = {{SIGINT, false}, {SIGQUIT, false}, {SIGTERM, true}, {SIGHUP, true}};
  sigset_t forwarded;
  sigemptyset(&forwarded);
  for (auto& plan : plans) {
    ::sigaction(plan.signal, nullptr, &plan.inherited);
    const bool ignored = plan.inherited.sa_handler == SIG_IGN && !(plan.inherited.sa_flags & SA_SIGINFO);
    if (ignored) continue;
    struct sigaction ours {};
    sigemptyset(&ours.sa_mask);
    ours.sa_handler = plan.forward ? &forward_signal : SIG_IGN;
    if (plan.forward) sigaddset(&forwarded, plan.signal);
    ::sigaction(plan.signal, &ours, nullptr);
  }
  // A forwarded signal arriving between fork() and the assignment of g_child would be lost: it
  // stays pending until the child's pid is known. The child restores the inherited mask.
  sigset_t inherited_mask;
  ::sigprocmask(SIG_BLOCK, &forwarded, &inherited_mask);

  std::fflush(nullptr);  // nothing buffered may be written twice
  const pid_t child = ::fork();
  if (child == 0)
    exec_child(argv.data(), envp.data(), root_pid.data(), digits_at, plans, std::size(plans), inherited_mask);
  const int fork_error = errno;
  if (child > 0) g_child = child;
  ::sigprocmask(SIG_SETMASK, &inherited_mask, nullptr);
  int status = 0;
  pid_t waited = -1;
  int wait_error = 0;
  if (child > 0) {
    do {
      waited = ::waitpid(child, &status, 0);
    } while (waited < 0 && errno == EINTR);
    wait_error = errno;
  }
  g_child = 0;
  for (const auto& plan : plans) ::sigaction(plan.signal, &plan.inherited, nullptr);
  TANDEM_REQUIRE(child > 0, std::string("fork failed: ") + std::strerror(fork_error));
  TANDEM_REQUIRE(waited == child, std::string("waitpid failed: ") + std::strerror(wait_error));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace tandem::cli
