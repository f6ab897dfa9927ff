#include "program_tools/program_tuner.h"

#include <algorithm>
#include <filesystem>

#include "program_tools/run_logs.h"
#include "tandem/error.h"
#include "tandem/nccl_candidates.h"
#include "tandem/overlap.h"
#include "tandem/printable.h"
#include "tandem/text.h"

namespace tandem::program_tools {
namespace {

// A candidate's run without --timeout: this many times the slowest baseline run, plus kSlackSeconds.
constexpr double kAutoTimeoutFactor = 3;
constexpr double kSlackSeconds = 60;

}  // namespace

std::vector<OverlapPolicy> program_candidates() {
  std::vector<OverlapPolicy> out = parse_policy_list("priority");
  for (int blocks = 1; blocks <= 4; ++blocks) {
    const std::string shape = "shape:" + std::to_string(blocks);
    out.push_back(parse_policy(shape));
    out.push_back(parse_policy(shape + "+priority"));
  }
  out.push_back(parse_policy("shape:auto+priority"));
  // The forms above are targeted (shaping only beside an outstanding collective): tried first, since they
  // cost nothing where nothing overlaps. The always-on form (compute-always) follows, for programs whose
  // every compute launch runs beside communication.
  for (const char* always : {"shape:2+priority+compute-always", "shape:4+priority+compute-always"})
    out.push_back(parse_policy(always));
  // NCCL's CTA count, cluster size and CTA policy: the benchmark tune's stage, on tandem run's default.
  for (const auto& p : nccl_candidates(parse_policy("priority"))) out.push_back(p);
  return out;
}

namespace {

class ProgramTuner {
 public:
  ProgramTuner(const ProgramTuneOptions& o, const ProgramTuneSinks& sinks) : o_(o), sinks_(sinks) {}

  ProgramTuneResult run() {
    TANDEM_REQUIRE(o_.rounds >= 1, "no rounds to run");
    ProgramSignals signals;
    const size_t n = o_.candidates.size();
    for (int round = 1; round <= o_.rounds; ++round) {
      // The baseline first, then the candidates rotated by one per round.
      std::vector<int> order = {0};
      for (size_t i = 0; i < n; ++i) order.push_back(static_cast<int>((i + static_cast<size_t>(round - 1)) % n) + 1);
      for (size_t position = 0; position < order.size(); ++position) {
        if (signals.interrupted() || !run_one(signals, round, static_cast<int>(position) + 1, order[position])) {
          result_.interrupted = true;
          return result_;
        }
      }
      result_.rounds_done = round;
      if (sinks_.on_round) sinks_.on_round(result_);
    }
    return result_;
  }

 private:
  // False when the run was interrupted (and is not recorded).
  bool run_one(ProgramSignals& signals, int round, int position, int candidate) {
    ProgramRun run;
    run.round = round;
    run.position = position;
    run.candidate = candidate;
    std::vector<std::string> argv;
    if (candidate > 0) run.policy = to_string(o_.candidates[static_cast<size_t>(candidate - 1)]);
    run.log = (std::filesystem::path(o_.logs_dir) / program_run_log_name(round, candidate ? run.policy : "baseline"))
                  .string();
    if (from_timeline(o_.objective)) {
      // Every run through `tandem run --timeline`, the baseline under `concurrent` (no control), so
      // that all are measured alike.
      argv = o_.tandem_run;
      argv.insert(argv.end(), {"--policy", candidate > 0 ? run.policy : "concurrent"});
      const auto recording = timeline_run_options(run_stats_prefix(run.log), o_.step_range);
      argv.insert(argv.end(), recording.begin(), recording.end());
      argv.push_back("--");
    } else if (candidate > 0) {
      argv = o_.tandem_run;
      argv.insert(argv.end(), {"--policy", run.policy, "--"});
    }
    argv.insert(argv.end(), o_.command.begin(), o_.command.end());
    const double timeout = run_time_limit(o_, result_.runs, candidate > 0);
    run.process = run_process(signals, argv, run.log, timeout);
    if (run.process.interrupted) return false;
    judge(run, timeout);
    if (signals.interrupted()) return false;  // its log was not read to the end: it does not count
    if (candidate == 0) {
      if (!run.failure.empty())
        TANDEM_USER_ERROR("the baseline run (the program without tandem, round " + std::to_string(round) +
                          "): " + run.failure);
      if (round == 1) reference_status_ = run.process.exit_status;
    }
    result_.runs.push_back(run);
    if (sinks_.on_run) sinks_.on_run(result_.runs.back(), result_);
    return true;
  }

  // The run's value, or why it does not count.
  void judge(ProgramRun& run, double timeout) const {
    const ProcessRun& p = run.process;
    std::vector<std::string> not_numbers, not_finite;
    if (!o_.metric.is_wall_time()) run.metric_values = o_.metric.values_in_file(run.log, &not_numbers, &not_finite);
    std::string failure;
    if (p.timed_out) {
      failure = "timed out after " + number(timeout) + " s";
    } else if (run.candidate == 0 && run.round == 1 && (p.exit_status == 126 || p.exit_status == 127)) {
      failure = "exit status " + std::to_string(p.exit_status) + ": the command could not be executed";
    } else if (run.candidate == 0 && run.round == 1 && p.exit_status >= 128) {
      failure = "killed by signal " + std::to_string(p.exit_status - 128);
    } else if (run.round > 1 || run.candidate > 0) {
      if (p.exit_status != reference_status_)
        failure =
            "exit status " + std::to_string(p.exit_status) + ", the baseline's " + std::to_string(reference_status_);
    }
    if (failure.empty() && from_timeline(o_.objective)) {
      const ObjectiveReading reading = read_timeline_objective(o_.objective, run_stats_prefix(run.log));
      if (reading.value) {
        run.value = reading.value;
        return;
      }
      failure = "its timeline: " + reading.failure;
    }
    // A value beyond a double's range is no measurement: the run fails, as one with no number at all.
    if (failure.empty() && !not_finite.empty())
      failure = "--metric captured " + quoted_value(not_finite.front()) + ", not a finite number";
    if (failure.empty() && !o_.metric.is_wall_time() && run.metric_values.empty())
      failure = not_numbers.empty() ? "--metric " + quoted_value(o_.metric.pattern()) + " matched nothing in its output"
                                    : "--metric captured " + quoted_value(not_numbers.front()) + ", not a number";
    if (!failure.empty()) {
      run.failure = failure + " (see " + run.log + ")";
      return;
    }
    run.value = o_.metric.is_wall_time() ? p.wall_s : median_of(run.metric_values);
  }

  const ProgramTuneOptions& o_;
  const ProgramTuneSinks& sinks_;
  ProgramTuneResult result_;
  int reference_status_ = 0;  // the baseline's exit status in round 1
};

}  // namespace

double run_time_limit(const ProgramTuneOptions& options, const std::vector<ProgramRun>& runs_so_far, bool candidate) {
  if (options.timeout_s > 0) return options.timeout_s;
  if (!candidate) return 0;
  double slowest_baseline = 0;
  for (const ProgramRun& r : runs_so_far)
    if (r.candidate == 0) slowest_baseline = std::max(slowest_baseline, r.process.wall_s);
  return kAutoTimeoutFactor * slowest_baseline + kSlackSeconds;
}

ProgramTuneResult tune_program(const ProgramTuneOptions& options, const ProgramTuneSinks& sinks) {
  return ProgramTuner(options, sinks).run();
}

}  // namespace tandem::program_tools
