#include "program_tools/program_process.h"

#include <signal.h>
#include <unistd.h>

#include "tandem/error.h"
#include "tandem/safe_file.h"

namespace tandem::program_tools {
namespace {

process::SignalPlan tune_signal_plan() {
  using process::OnSignal;
  process::SignalPlan plan;
  plan.signals = {{SIGINT, OnSignal::Interrupt}, {SIGTERM, OnSignal::Interrupt}, {SIGHUP, OnSignal::Interrupt}};
  plan.subreaper = true;
  return plan;
}

// Closes the log when the run ends, however it ends.
struct Descriptor {
  int fd;
  ~Descriptor() { ::close(fd); }
};

}  // namespace

ProgramSignals::ProgramSignals() : process::Supervisor(tune_signal_plan()) {}

ProcessRun run_process(ProgramSignals& signals, const std::vector<std::string>& argv, const std::string& log_path,
                       double timeout_s) {
  // The logs folder is the user's (--logs): what is wrong there is theirs to fix, one plain line.
  const Descriptor log{checking_input([&] { return open_new_file(log_path, 0600); })};
  process::ChildOptions options;
  options.argv = argv;
  options.own_process_group = true;
  options.output_fd = log.fd;
  options.null_input = true;
  options.timeout_s = timeout_s;
  options.end_descendants = true;
  options.who = "tandem tune";
  const process::ChildResult child = signals.run(options);
  ProcessRun run;
  run.exit_status = child.exit_status;
  run.exec_failed = child.exec_failed;
  run.timed_out = child.timed_out;
  run.interrupted = child.interrupted_by != 0 || signals.interrupted();
  run.wall_s = child.wall_s;
  return run;
}

}  // namespace tandem::program_tools
