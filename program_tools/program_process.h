#pragma once
// One run of a user's command for `tandem tune -- CMD` (process/child_process.h): in its own process
// group (so a timeout ends the whole tree a launcher such as torchrun starts), stdin from /dev/null,
// stdout and stderr into a new log file, timed from fork to reaping; when it ends, everything it
// started is killed, also workers that left its group (setsid). SIGINT, SIGTERM and SIGHUP sent to
// tandem end the run in flight too and are reported, so the tune can keep what it finished; they
// are honoured between runs as well (ProgramSignals::interrupted), and a second one ends tandem.
#include <string>
#include <vector>

#include "process/child_process.h"

namespace tandem::program_tools {

struct ProcessRun {
  int exit_status = -1;      // as a shell reports it: the status, or 128 + the signal that ended it
  bool exec_failed = false;  // the command could not be executed (exit status 127 or 126)
  bool timed_out = false;    // killed after the timeout
  bool interrupted = false;  // ended because tandem was interrupted (SIGINT, SIGTERM, SIGHUP)
  double wall_s = 0;
};

// The supervisor of a tune's runs: SIGINT, SIGTERM and SIGHUP interrupt (unless tandem was told to
// ignore them: nohup), orphans of a run become tandem's children so that they can be ended with it.
// Restores the dispositions and the mask it found.
class ProgramSignals : public process::Supervisor {
 public:
  ProgramSignals();
};

// Runs `argv` (PATH searched) with output to `log_path`, a new file (tandem/safe_file.h:
// open_new_file: a link, FIFO or device there is refused, a hard link is not truncated).
// `timeout_s` <= 0: no limit. A run that times out gets SIGTERM, then SIGKILL after a grace period.
// Throws tandem::Error when the log cannot be created or fork fails; a command that cannot be
// executed exits 127 (or 126) with the reason in its log.
ProcessRun run_process(ProgramSignals& signals, const std::vector<std::string>& argv, const std::string& log_path,
                       double timeout_s);

}  // namespace tandem::program_tools
