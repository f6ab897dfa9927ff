#pragma once
// `tandem tune -- CMD ARGS...`: measures a user's program under each candidate policy that
// `tandem run` can apply, against the plain program (the baseline, no interposer), and decides which
// policy, if any, makes it faster beyond the noise.
//
// Rounds: each round runs the baseline, then every candidate in an order rotated by one per round,
// so that drift (clocks warming, a file cache filling) does not favour whoever runs first. A run's
// value is the median of what --metric's capture group matched in its output (or its wall time).
// A candidate wins only if its median beats the baseline's by more than both spreads (max - min over
// the rounds) added: a gain inside the noise is no gain.
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "program_tools/program_metric.h"
#include "program_tools/program_objective.h"
#include "program_tools/program_process.h"
#include "program_tools/program_tune_report.h"
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

// What is known about one policy (or the baseline) over the rounds done.
struct PolicyStats {
  int candidate = 0;  // 0: the baseline
  std::string policy;
  std::vector<double> values;  // one per round it ran in
  double median = 0, min = 0, max = 0;
  std::string disqualified;  // why it is out of the running ("" when it is in)
  double spread() const { return max - min; }
};

struct ProgramTuneResult {
  std::vector<ProgramRun> runs;
  int rounds_done = 0;
  bool interrupted = false;
};

// The decision over what is measured: the winner (index into `stats`, whose [0] is the baseline) or
// none, and why.
struct ProgramDecision {
  std::optional<size_t> winner;
  std::string reason;
};

// The time limit of the next run, in seconds (0: none): --timeout when given; else none for the
// baseline, and for a candidate 3 times the slowest baseline run so far plus 60 s, so that a policy
// that hangs the program cannot hang the tune while a slow program still has room.
double run_time_limit(const ProgramTuneOptions& options, const std::vector<ProgramRun>& runs_so_far, bool candidate);

// Per-policy statistics over the runs of finished rounds ([0] the baseline, then the candidates in
// the options' order). A candidate that failed any run is disqualified with that run's reason.
std::vector<PolicyStats> program_stats(const ProgramTuneOptions& options, const ProgramTuneResult& result);
// The candidate with the best median among those whose median beats the baseline's by more than the
// two spreads added; none if no candidate does.
ProgramDecision decide_program_policy(const std::vector<PolicyStats>& stats, bool higher_is_better);

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

// The run's log file name in the logs folder: "round1-baseline.log", "round2-shape-2+priority.log".
std::string program_run_log_name(int round, const std::string& policy);

// Removes what an earlier tune left in a --logs folder reused now: its run logs and its runs' stats
// files ("round<N>-<policy>.log", "round<N>-<policy>.stats-<pid>.json"), which a timeline objective
// would otherwise read as more ranks of this tune's runs. Regular files only (a link, FIFO or device
// in a log's place is refused by the run that meets it); other names are left alone. Returns how
// many it removed; throws tandem::Error naming a file it cannot remove.
size_t remove_earlier_run_files(const std::string& logs_dir);

// The results table's lines (program_tune_report.h): the baseline, then the candidates best
// first, the disqualified last.
std::vector<ProgramPolicyLine> program_table(const std::vector<PolicyStats>& stats, const ProgramDecision& decision,
                                             const ProgramMetric& metric);

// The runs and stats as JSON: the "policies", "runs" and "decision" members of the --json document.
nlohmann::json program_tune_json(const ProgramTuneOptions& options, const ProgramTuneResult& result,
                                 const std::vector<PolicyStats>& stats, const ProgramDecision& decision);

}  // namespace tandem::program_tools
