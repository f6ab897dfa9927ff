#pragma once
// How tandem starts and supervises one program: `tandem run -- CMD` (the program in tandem's own
// process group, signals passed on, its exit status returned) and `tandem tune -- CMD` (each run in
// a process group of its own, output to a log, a time limit, every descendant ended with it). One
// fork/exec path, one signal model, one wait loop (docs/RUN.md, Signals).
//
// Signals: a Supervisor records the dispositions and the mask tandem was given, changes them for
// its own lifetime as its plan says, and restores them; a child always starts with what tandem
// was given (an ignored SIGHUP under nohup stays ignored, a blocked signal stays blocked). While a
// child runs, the planned signals are blocked and taken with sigtimedwait: no handler races the
// wait. Between runs an interrupting signal is recorded by a handler (interrupted()); a second one
// ends tandem the default way, so a stuck tandem can always be stopped.
#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tandem::process {

// What tandem does with a signal sent to it while it supervises a program.
enum class OnSignal {
  Forward,    // passed on to the program (its process group when it has one of its own)
  Ignore,     // tandem ignores it while the program runs: a terminal's Ctrl-C reaches the program
              // directly (same foreground group), which decides, as with system(3)
  Interrupt,  // ends the run: passed on to the program's group, a grace period, then SIGKILL
};

struct SignalPlan {
  std::vector<std::pair<int, OnSignal>> signals;
  // SIGPIPE ignored by tandem itself, so that a closed stdout or stderr makes its own writes fail
  // (EPIPE) instead of killing it while the program runs on; the program gets the inherited one.
  bool ignore_own_sigpipe = true;
  // prctl(PR_SET_CHILD_SUBREAPER): orphans of the program's tree (a daemon, a `setsid` worker)
  // become tandem's children instead of init's, so that ChildOptions::end_descendants finds them.
  bool subreaper = false;
};

// One program to run.
struct ChildOptions {
  std::vector<std::string> argv;  // argv[0] is searched in PATH
  // The whole environment as "NAME=value" entries; nullopt: tandem's own.
  std::optional<std::vector<std::string>> environment;
  // If set: "<pid_variable>=<the child's pid>" is added to its environment (TANDEM_ROOT_PID).
  std::string pid_variable;
  bool own_process_group = false;  // its own group: a timeout or an interrupt ends the whole tree
  int output_fd = -1;              // the child's stdout and stderr; -1: tandem's
  bool null_input = false;         // stdin from /dev/null
  double timeout_s = 0;            // <= 0: no limit
  // How long a program told to stop (time-out, interrupt) may take to end its own way (a launcher
  // tearing down its workers, NCCL freeing resources) before everything it started is killed.
  double grace_s = 5;
  // When the run ends, every process it started is killed: its group and, through the process tree
  // (/proc), any descendant that left the group (setsid); with SignalPlan::subreaper also orphans.
  bool end_descendants = false;
  // Prefixes the one line a failed exec prints on the child's stderr: "tandem run: cannot execute ...".
  std::string who = "tandem";
};

struct ChildResult {
  int exit_status = -1;      // as a shell reports it: the status, or 128 + the signal that ended it
  bool exec_failed = false;  // 127/126 from the exec itself (not the program's own exit status)
  bool timed_out = false;
  int interrupted_by = 0;  // the Interrupt signal that ended the run, else 0
  double wall_s = 0;       // from fork to the end of the program
};

class Supervisor {
 public:
  explicit Supervisor(SignalPlan plan);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Runs one program to its end (or the time limit, or an interrupt). Throws tandem::Error when
  // fork fails; a program that cannot be executed ends with 127 (not found) or 126, its reason on
  // its stderr as one printable line.
  ChildResult run(const ChildOptions& options);

  // An Interrupt signal arrived (during a run or since), and which one (0: none).
  bool interrupted() const;
  int interrupting_signal() const;

 private:
  struct State;
  State* state_;
};

// Whether an Interrupt signal reached the live Supervisor: long work between runs (reading a log)
// checks it to stop early. False when there is none.
bool interrupt_pending();

// Writes all of `text` to `fd` (retrying after EINTR and short writes); false on error. Async-signal
// safe: for a forked child before exec and for a crash handler.
bool write_all(int fd, const char* text, size_t length) noexcept;
bool write_all(int fd, const char* text) noexcept;

// The pids of every living descendant of `ancestor` (children, their children...), from /proc.
std::vector<pid_t> descendants_of(pid_t ancestor);

}  // namespace tandem::process
