#pragma once
// `tandem tune -- CMD ARGS...`: measures a user's program under each candidate policy that
// `tandem run` can apply, against the plain program (the baseline, no interposer); which policy, if
// any, makes it faster beyond the noise is program_tune_decision.h's to say.
//
// Rounds: each round runs the baseline, then every candidate in an order rotated by one per round,
// so that drift (clocks warming, a file cache filling) does not favour whoever runs first. A run's
// value is the median of what --metric's capture group matched in its output (or its wall time), or
// a figure of its timeline (program_objective.h).
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "program_tools/program_metric.h"
#include "program_tools/program_objective.h"
#include "program_tools/program_process.h"
#include "tandem/policy.h"

namespace tandem::program_tools {

// The policies tried by default: every control `tandem run` applies to an unmodified program
// (priority, shaping levels with and without priority, shape:auto+priority, NCCL's CTA settings on
// top of priority). The caller drops those `tandem run` cannot apply.
std::vector<OverlapPolicy> program_candidates();

struct ProgramTuneOptions {
  std::vector<std::string> command;  // CMD ARGS...
  std::vector<OverlapPolicy> candidates;
  int rounds = 3;
  // Per run; <= 0: none given, in which case a candidate run is limited to 3 x the slowest baseline
  // run so far + 60 s (a policy that hangs the program must not hang the tune), the baseline to none.
  double timeout_s = 0;
  ProgramMetric metric;
  // StepTime or ExposedCommunication: every run, the baseline included (under `concurrent`), goes
  // through `tandem run --timeline` and is valued by its timeline (program_objective.h); Wall and
  // Metric: `metric` decides.
  ObjectiveKind objective = ObjectiveKind::Wall;
  std::string step_range;  // the timeline's steps (--step-range), "" for the whole run
  std::string logs_dir;
  // How a candidate runs: tandem_run + {"--policy", P, "--", CMD...}, e.g. {"/proc/self/exe", "run"}.
  std::vector<std::string> tandem_run;
};

// One run of the baseline (policy empty) or of a candidate.
struct ProgramRun {
  int round = 0;      // 1-based
  int position = 0;   // 1-based place in its round
  int candidate = 0;  // 0: the baseline, else 1-based index into ProgramTuneOptions::candidates
  std::string policy;
  std::string log;
  ProcessRun process;
  std::vector<double> metric_values;  // all matches (wall time: none)
  std::optional<double> value;        // the run's value: metric median or wall seconds
  std::string failure;                // why it does not count ("" when it does)
};

struct ProgramTuneResult {
  std::vector<ProgramRun> runs;
  int rounds_done = 0;
  bool interrupted = false;
};

// The time limit of the next run, in seconds (0: none): --timeout when given; else none for the
// baseline, and for a candidate 3 times the slowest baseline run so far plus 60 s, so that a policy
// that hangs the program cannot hang the tune while a slow program still has room.
double run_time_limit(const ProgramTuneOptions& options, const std::vector<ProgramRun>& runs_so_far, bool candidate);

// What tune_program reports while it works: each run as it ends (for progress lines) and each round
// as it ends (for the best-so-far file and JSON).
struct ProgramTuneSinks {
  std::function<void(const ProgramRun&, const ProgramTuneResult&)> on_run;
  std::function<void(const ProgramTuneResult&)> on_round;
};

// Runs the rounds. Stops early, with `interrupted`, on SIGINT, SIGTERM or SIGHUP (the run in flight
// is ended and not counted). Throws tandem::UserError when the baseline cannot be measured (it timed
// out, its exit status changed between rounds, or the metric is not in its output), naming its log.
ProgramTuneResult tune_program(const ProgramTuneOptions& options, const ProgramTuneSinks& sinks = {});

}  // namespace tandem::program_tools
