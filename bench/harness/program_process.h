#pragma once
// One run of a user's command for `tandem tune -- CMD`: in its own process group (so a timeout ends
// the whole tree a launcher such as torchrun starts), stdin from /dev/null, stdout and stderr into a
// log file, timed from fork to reaping. SIGINT, SIGTERM and SIGHUP sent to tandem meanwhile end the
// run too (the program is not in the terminal's foreground group, so tandem passes the signal on)
// and are reported, so the tune can keep what it finished.
#include <string>
#include <vector>

namespace tandem::bench {

struct ProcessRun {
  int exit_status = -1;      // as a shell reports it: the status, or 128 + the signal that ended it
  bool timed_out = false;    // killed after the timeout
  bool interrupted = false;  // ended because tandem was interrupted (SIGINT, SIGTERM, SIGHUP)
  double wall_s = 0;
};

// While one exists, SIGINT, SIGTERM and SIGHUP are held for run_process (which reports them as
// `interrupted`) and SIGCHLD is at its default, so that children can be waited for. Restores the
// signal mask and dispositions it found; a signal held and not yet seen then is dropped.
class ProgramSignals {
 public:
  ProgramSignals();
  ~ProgramSignals();
  ProgramSignals(const ProgramSignals&) = delete;
  ProgramSignals& operator=(const ProgramSignals&) = delete;
  // Whether an interrupting signal arrived (seen by run_process, or pending now).
  bool interrupted();

 private:
  struct Saved;
  Saved* saved_;
  bool interrupted_ = false;
  friend ProcessRun run_process(ProgramSignals&, const std::vector<std::string>&, const std::string&, double);
};

// Runs `argv` (PATH searched) with output to `log_path` (created or truncated; a symbolic link is
// refused). `timeout_s` <= 0: no limit. A run that times out gets SIGTERM on its process group, then
// SIGKILL after a grace period; whatever of its group is left when it ends is killed, so no stray
// worker runs into the next measurement. Throws tandem::Error when the log cannot be opened or fork
// fails; a command that cannot be executed exits 127 (or 126) with the reason in its log.
ProcessRun run_process(ProgramSignals& signals, const std::vector<std::string>& argv, const std::string& log_path,
                       double timeout_s);

}  // namespace tandem::bench
