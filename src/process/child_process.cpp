#include "process/child_process.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include "tandem/error.h"
#include "tandem/printable.h"

extern char** environ;

namespace tandem::process {
namespace {

using Clock = std::chrono::steady_clock;

// How long the processes a run left behind may take to die once killed before tandem goes on.
constexpr double kReapSeconds = 5;

// The Interrupt signal received (0: none). One Supervisor at a time owns it.
volatile sig_atomic_t g_interrupt_signal = 0;
bool g_supervisor_alive = false;

// Between runs: the first interrupting signal is recorded for the caller to honour at its next
// check; a second one ends tandem the default way (the caller may be stuck where it cannot check).
void on_interrupt(int signal) {
  if (g_interrupt_signal != 0) {
    struct sigaction dfl {};
    sigemptyset(&dfl.sa_mask);
    dfl.sa_handler = SIG_DFL;
    ::sigaction(signal, &dfl, nullptr);
    ::kill(::getpid(), signal);  // delivered when this handler returns
    return;
  }
  g_interrupt_signal = signal;
}

bool is_ignored(const struct sigaction& a) { return a.sa_handler == SIG_IGN && !(a.sa_flags & SA_SIGINFO); }

timespec to_timespec(double seconds) {
  if (seconds < 0) seconds = 0;
  timespec t{};
  t.tv_sec = static_cast<time_t>(seconds);
  t.tv_nsec = static_cast<long>((seconds - static_cast<double>(t.tv_sec)) * 1e9);
  return t;
}

Clock::time_point after(double seconds, Clock::time_point from = Clock::now()) {
  return from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

double seconds_until(Clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - Clock::now()).count();
}

// Every process of /proc: its parent, and whether it is a zombie.
struct ProcessEntry {
  pid_t parent = 0;
  bool zombie = false;
};

std::map<pid_t, ProcessEntry> process_table() {
  std::map<pid_t, ProcessEntry> table;
  DIR* proc = ::opendir("/proc");
  if (!proc) return table;
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char text[512];
    const ssize_t n = ::read(fd, text, sizeof text - 1);
    ::close(fd);
    if (n <= 0) continue;
    text[n] = '\0';
    // "pid (comm) S ppid ...": the name may hold spaces and parentheses, so read after the last ')'.
    const char* close = std::strrchr(text, ')');
    char state = 0;
    long parent = 0;
    if (!close || std::sscanf(close + 1, " %c %ld", &state, &parent) != 2) continue;
    table[static_cast<pid_t>(pid)] = {static_cast<pid_t>(parent), state == 'Z'};
  }
  ::closedir(proc);
  return table;
}

std::vector<pid_t> descendants_in(const std::map<pid_t, ProcessEntry>& table, pid_t ancestor) {
  std::multimap<pid_t, pid_t> children;
  for (const auto& [pid, entry] : table) children.emplace(entry.parent, pid);
  std::vector<pid_t> out;
  std::vector<pid_t> frontier = {ancestor};
  while (!frontier.empty()) {
    const pid_t parent = frontier.back();
    frontier.pop_back();
    const auto [begin, end] = children.equal_range(parent);
    for (auto it = begin; it != end; ++it) {
      if (out.size() > table.size()) return out;  // a cycle in a table read while it changed
      out.push_back(it->second);
      frontier.push_back(it->second);
    }
  }
  return out;
}

}  // namespace

bool write_all(int fd, const char* text, size_t length) noexcept {
  while (length > 0) {
    const ssize_t n = ::write(fd, text, length);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text += n;
    length -= static_cast<size_t>(n);
  }
  return true;
}

bool write_all(int fd, const char* text) noexcept { return write_all(fd, text, std::strlen(text)); }

std::vector<pid_t> descendants_of(pid_t ancestor) {
  std::vector<pid_t> out;
  const auto table = process_table();
  for (pid_t pid : descendants_in(table, ancestor))
    if (!table.at(pid).zombie) out.push_back(pid);
  return out;
}

struct Supervisor::State {
  SignalPlan plan;
  sigset_t inherited_mask;
  // Every signal the Supervisor changes, with the disposition it found (restored in each child and
  // at the end).
  std::vector<std::pair<int, struct sigaction>> inherited;
  std::vector<std::pair<int, OnSignal>> active;  // the plan less the signals tandem was told to ignore
  sigset_t waited;                               // the active Forward/Interrupt signals and SIGCHLD
  bool subreaper_set = false;

  const struct sigaction* found(int signal) const {
    for (const auto& [s, a] : inherited)
      if (s == signal) return &a;
    return nullptr;
  }
  void set(int signal, void (*handler)(int)) const {
    struct sigaction a {};
    sigemptyset(&a.sa_mask);
    a.sa_handler = handler;
    a.sa_flags = SA_RESTART;
    ::sigaction(signal, &a, nullptr);
  }
};

Supervisor::Supervisor(SignalPlan plan) : state_(new State) {
  TANDEM_REQUIRE(!g_supervisor_alive, "one process supervisor at a time");
  g_supervisor_alive = true;
  g_interrupt_signal = 0;
  State& s = *state_;
  s.plan = std::move(plan);
  ::sigprocmask(SIG_SETMASK, nullptr, &s.inherited_mask);
  std::vector<int> touched = {SIGCHLD, SIGPIPE};
  for (const auto& [signal, role] : s.plan.signals) touched.push_back(signal);
  for (int signal : touched) {
    if (s.found(signal)) continue;
    struct sigaction a {};
    ::sigaction(signal, nullptr, &a);
    s.inherited.emplace_back(signal, a);
  }
  sigemptyset(&s.waited);
  sigaddset(&s.waited, SIGCHLD);
  for (const auto& [signal, role] : s.plan.signals) {
    // A signal tandem was told to ignore stays ignored and is not passed on: `nohup tandem run`.
    if (is_ignored(*s.found(signal))) continue;
    s.active.emplace_back(signal, role);
    if (role != OnSignal::Ignore) sigaddset(&s.waited, signal);
    if (role == OnSignal::Interrupt) s.set(signal, &on_interrupt);
  }
  // SIG_IGN would have the kernel reap the children before tandem can read their status.
  s.set(SIGCHLD, SIG_DFL);
  if (s.plan.ignore_own_sigpipe) s.set(SIGPIPE, SIG_IGN);
  if (s.plan.subreaper) s.subreaper_set = ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
}

Supervisor::~Supervisor() {
  State& s = *state_;
  if (s.subreaper_set) ::prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
  for (const auto& [signal, action] : s.inherited) ::sigaction(signal, &action, nullptr);
  ::sigprocmask(SIG_SETMASK, &s.inherited_mask, nullptr);
  delete state_;
  g_supervisor_alive = false;
}

bool interrupt_pending() { return g_supervisor_alive && g_interrupt_signal != 0; }

bool Supervisor::interrupted() const { return g_interrupt_signal != 0; }

int Supervisor::interrupting_signal() const { return g_interrupt_signal; }

ChildResult Supervisor::run(const ChildOptions& o) {
  TANDEM_REQUIRE(!o.argv.empty(), "no command to run");
  const State& s = *state_;
  // Everything the child needs is built before fork: between fork and exec it may only make
  // async-signal-safe calls (no allocation, no formatting).
  std::vector<std::string> args = o.argv;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  if (o.environment) {
    env_strings = *o.environment;
  } else {
    for (char** entry = environ; entry && *entry; ++entry) env_strings.emplace_back(*entry);
  }
  std::string pid_entry;
  size_t digits_at = 0;
  if (!o.pid_variable.empty()) {
    const std::string prefix = o.pid_variable + "=";
    for (auto it = env_strings.begin(); it != env_strings.end();)
      it = it->compare(0, prefix.size(), prefix) == 0 ? env_strings.erase(it) : it + 1;
    pid_entry = prefix;
    digits_at = pid_entry.size();
    pid_entry.resize(digits_at + 24, '\0');  // the child writes its own pid here
  }
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  if (!pid_entry.empty()) envp.push_back(pid_entry.data());
  envp.push_back(nullptr);
  // One printable line however the command is spelled (escapes, line breaks, 100 KB arguments).
  const std::string cannot_execute = o.who + ": cannot execute " + quoted_value(o.argv[0]) + ": ";
  const int null_input = o.null_input ? ::open("/dev/null", O_RDONLY | O_CLOEXEC) : -1;
  // Tells the parent whether exec succeeded: closed by exec (O_CLOEXEC), or the child's errno.
  int exec_pipe[2] = {-1, -1};
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) exec_pipe[0] = exec_pipe[1] = -1;

  // The planned signals are held from before fork: one arriving before the child's pid is known is
  // passed on after. Ignore-signals are ignored by tandem for the run.
  sigset_t mask_before;
  ::sigprocmask(SIG_BLOCK, &s.waited, &mask_before);
  for (const auto& [signal, role] : s.active)
    if (role == OnSignal::Ignore) s.set(signal, SIG_IGN);

  std::fflush(nullptr);  // nothing buffered may be written twice
  const auto started = Clock::now();
  const pid_t child = ::fork();
  if (child == 0) {
    if (o.own_process_group) ::setpgid(0, 0);
    if (null_input >= 0) ::dup2(null_input, STDIN_FILENO);
    if (o.output_fd >= 0) {
      ::dup2(o.output_fd, STDOUT_FILENO);
      ::dup2(o.output_fd, STDERR_FILENO);
    }
    // The program starts with exactly what tandem was given.
    for (const auto& [signal, action] : s.inherited) ::sigaction(signal, &action, nullptr);
    ::sigprocmask(SIG_SETMASK, &s.inherited_mask, nullptr);
    if (!pid_entry.empty()) {
      char digits[24];
      int n = 0;
      for (long pid = static_cast<long>(::getpid()); pid > 0; pid /= 10)
        digits[n++] = static_cast<char>('0' + pid % 10);
      for (int i = 0; i < n; ++i) pid_entry[digits_at + i] = digits[n - 1 - i];
      pid_entry[digits_at + n] = '\0';
    }
    ::execvpe(argv[0], argv.data(), envp.data());
    const int error = errno;
    write_all(STDERR_FILENO, cannot_execute.data(), cannot_execute.size());
    write_all(STDERR_FILENO, std::strerror(error));
    write_all(STDERR_FILENO, "\n");
    if (exec_pipe[1] >= 0) write_all(exec_pipe[1], reinterpret_cast<const char*>(&error), sizeof error);
    ::_exit(error == ENOENT ? 127 : 126);  // as shells report "not found" / "not executable"
  }
  const int fork_error = errno;
  if (null_input >= 0) ::close(null_input);
  if (exec_pipe[1] >= 0) ::close(exec_pipe[1]);
  const auto restore = [&] {
    for (const auto& [signal, role] : s.active)
      if (role == OnSignal::Ignore) ::sigaction(signal, s.found(signal), nullptr);
    // Signals that arrived once the program had ended: an interrupt is recorded, the rest dropped,
    // rather than delivered to tandem as it reports the program's status.
    const timespec now{};
    for (int signal; (signal = ::sigtimedwait(&s.waited, nullptr, &now)) > 0;)
      for (const auto& [planned, role] : s.active)
        if (planned == signal && role == OnSignal::Interrupt && g_interrupt_signal == 0) g_interrupt_signal = signal;
    ::sigprocmask(SIG_SETMASK, &mask_before, nullptr);
  };
  if (child < 0) {
    if (exec_pipe[0] >= 0) ::close(exec_pipe[0]);
    restore();
    TANDEM_THROW(std::string("fork failed: ") + std::strerror(fork_error));
  }
  // Also here: a signal sent before the child ran setpgid still reaches its group.
  if (o.own_process_group) ::setpgid(child, child);
  ChildResult result;
  if (exec_pipe[0] >= 0) {
    int error = 0;
    ssize_t n;
    while ((n = ::read(exec_pipe[0], &error, sizeof error)) < 0 && errno == EINTR) {
    }
    result.exec_failed = n == static_cast<ssize_t>(sizeof error);
    ::close(exec_pipe[0]);
  }

  // The whole tree: its group and, for a supervised run, every descendant that left it (setsid).
  const auto signal_tree = [&](int signal) {
    if (o.own_process_group) ::kill(-child, signal);
    if (o.end_descendants)
      for (pid_t pid : descendants_of(::getpid())) ::kill(pid, signal);
    if (!o.own_process_group && !o.end_descendants) ::kill(child, signal);
  };
  std::optional<Clock::time_point> deadline;
  if (o.timeout_s > 0) deadline = after(o.timeout_s, started);
  bool stopping = false;  // told to stop (time-out, interrupt); SIGKILL when the grace period ends
  for (;;) {
    // WNOWAIT: the ended child stays a zombie until its group is killed below, so its pid, the id of
    // its group, cannot have been given to another process meanwhile.
    siginfo_t ended{};
    const int waited = ::waitid(P_PID, static_cast<id_t>(child), &ended, WEXITED | WNOHANG | WNOWAIT);
    if (waited == 0 && ended.si_pid == child) break;
    if (waited != 0 && errno != EINTR) {
      const int error = errno;
      restore();
      TANDEM_THROW(std::string("waitid failed: ") + std::strerror(error));
    }
    timespec left{};
    if (deadline) left = to_timespec(seconds_until(*deadline));
    const int signal = ::sigtimedwait(&s.waited, nullptr, deadline ? &left : nullptr);
    if (signal == SIGCHLD || (signal < 0 && errno == EINTR)) continue;
    if (signal > 0) {
      OnSignal role = OnSignal::Forward;
      for (const auto& [planned, r] : s.active)
        if (planned == signal) role = r;
      if (role == OnSignal::Forward) {
        ::kill(o.own_process_group ? -child : child, signal);
        continue;
      }
      // An interrupt: passed on, so that the program shuts down its own way; a second one during the
      // grace period ends it at once.
      if (stopping) {
        signal_tree(SIGKILL);
        deadline.reset();
        continue;
      }
      if (g_interrupt_signal == 0) g_interrupt_signal = signal;
      result.interrupted_by = signal;
      signal_tree(signal);
    } else if (!stopping) {  // the time limit
      result.timed_out = true;
      signal_tree(SIGTERM);
    } else {  // the grace period is over
      signal_tree(SIGKILL);
      deadline.reset();
      continue;
    }
    stopping = true;
    deadline = after(o.grace_s);
  }
  result.wall_s = std::chrono::duration<double>(Clock::now() - started).count();
  if (o.end_descendants) {
    // Workers the program left behind would run into the next measurement. Killed ones that were
    // handed to tandem (subreaper) are reaped here; the program itself last, for its status.
    const auto give_up = after(kReapSeconds);
    for (;;) {
      if (o.own_process_group) ::kill(-child, SIGKILL);
      const auto table = process_table();
      bool left = false;
      for (pid_t pid : descendants_in(table, ::getpid())) {
        if (pid == child) continue;
        left = true;
        if (!table.at(pid).zombie) ::kill(pid, SIGKILL);
        if (table.at(pid).parent == ::getpid()) ::waitpid(pid, nullptr, WNOHANG);
      }
      if (!left || Clock::now() > give_up) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  restore();
  if (WIFEXITED(status))
    result.exit_status = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    result.exit_status = 128 + WTERMSIG(status);
  else
    result.exit_status = 1;
  return result;
}

}  // namespace tandem::process
