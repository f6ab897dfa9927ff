#include "program_tools/program_tuner.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "report/report.h"
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

// Whether `a` is better than `b`.
bool better(double a, double b, bool higher_is_better) { return higher_is_better ? a > b : a < b; }

std::string percent_text(double gain, double reference) {
  return reference == 0 ? "" : bench::format(" (%.1f %%)", 100.0 * gain / std::fabs(reference));
}

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

std::string program_run_log_name(int round, const std::string& policy) {
  std::string name;
  for (char c : policy) {
    if (c == ':')
      name += '-';
    else if (std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '.' || c == '-')
      name += c;
    else
      name += '_';
  }
  return "round" + std::to_string(round) + "-" + name + ".log";
}

namespace {

bool all_digits(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool ends_with(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

// "round<N>-<policy>.log" or "round<N>-<policy>.stats-<pid>.json" (program_run_log_name, stats_prefix).
bool earlier_run_file(const std::string& name) {
  const size_t dash = name.find('-');
  if (name.rfind("round", 0) != 0 || dash == std::string::npos || !all_digits(name.substr(5, dash - 5))) return false;
  if (ends_with(name, ".log")) return true;
  const size_t stats = name.rfind(".stats-");
  return stats != std::string::npos && ends_with(name, ".json") &&
         all_digits(name.substr(stats + 7, name.size() - stats - 7 - 5));
}

}  // namespace

size_t remove_earlier_run_files(const std::string& logs_dir) {
  namespace fs = std::filesystem;
  size_t removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(logs_dir, ec)) {
    // Regular files only: a link, FIFO or device in a log's place stops the run that meets it.
    std::error_code kind;
    if (!earlier_run_file(entry.path().filename().string()) || !fs::is_regular_file(entry.symlink_status(kind)))
      continue;
    TANDEM_REQUIRE(::unlink(entry.path().c_str()) == 0, "cannot remove " + quoted_value(entry.path().string()) +
                                                            ", left by an earlier tune: " + std::strerror(errno));
    ++removed;
  }
  TANDEM_REQUIRE(!ec, "cannot read the --logs folder " + quoted_value(logs_dir) + ": " + ec.message());
  return removed;
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
      const auto recording = timeline_run_options(stats_prefix(run.log), o_.step_range);
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
      const ObjectiveReading reading = read_timeline_objective(o_.objective, stats_prefix(run.log));
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

  // A run's stats files ("<log without .log>.stats-<pid>.json"): the timeline objectives read them.
  static std::string stats_prefix(const std::string& log) {
    return log.substr(0, log.size() - std::string(".log").size()) + ".stats-";
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

std::vector<PolicyStats> program_stats(const ProgramTuneOptions& options, const ProgramTuneResult& result) {
  std::vector<PolicyStats> stats(options.candidates.size() + 1);
  for (size_t i = 0; i < stats.size(); ++i) {
    stats[i].candidate = static_cast<int>(i);
    stats[i].policy = i == 0 ? "baseline" : to_string(options.candidates[i - 1]);
  }
  for (const ProgramRun& run : result.runs) {
    if (run.round > result.rounds_done) continue;  // an unfinished round compares nothing yet
    PolicyStats& s = stats[static_cast<size_t>(run.candidate)];
    if (!run.failure.empty() && s.disqualified.empty())
      s.disqualified = "round " + std::to_string(run.round) + ": " + run.failure;
    if (run.value) s.values.push_back(*run.value);
  }
  for (PolicyStats& s : stats) {
    if (s.values.empty()) continue;
    s.median = median_of(s.values);
    const auto [min, max] = std::minmax_element(s.values.begin(), s.values.end());
    s.min = *min;
    s.max = *max;
  }
  return stats;
}

ProgramDecision decide_program_policy(const std::vector<PolicyStats>& stats, bool higher_is_better) {
  TANDEM_REQUIRE(!stats.empty() && stats[0].candidate == 0, "no baseline to compare with");
  const PolicyStats& base = stats[0];
  ProgramDecision d;
  if (base.values.empty()) {
    d.reason = "no round finished";
    return d;
  }
  const PolicyStats* closest = nullptr;  // the best candidate that did not win, for the reason
  for (size_t i = 1; i < stats.size(); ++i) {
    const PolicyStats& c = stats[i];
    if (!c.disqualified.empty() || c.values.size() != base.values.size()) continue;
    const double gain = higher_is_better ? c.median - base.median : base.median - c.median;
    if (gain > base.spread() + c.spread()) {
      if (!d.winner || better(c.median, stats[*d.winner].median, higher_is_better)) d.winner = i;
    } else if (!closest || better(c.median, closest->median, higher_is_better)) {
      closest = &c;
    }
  }
  if (d.winner) {
    const PolicyStats& w = stats[*d.winner];
    const double gain = std::fabs(w.median - base.median);
    d.reason = w.policy + " beats the baseline by " + number(gain) + percent_text(gain, base.median) +
               ", more than the spreads added (" + number(base.spread()) + " + " + number(w.spread()) + ")";
  } else if (closest) {
    d.reason = "no policy beats the baseline by more than the spreads; the best, " + closest->policy + ", has median " +
               number(closest->median) + " (spread " + number(closest->spread()) + ") against " + number(base.median) +
               " (spread " + number(base.spread()) + ")";
  } else {
    d.reason = "no policy beats the baseline: every candidate was disqualified";
  }
  return d;
}

std::vector<ProgramPolicyLine> program_table(const std::vector<PolicyStats>& stats, const ProgramDecision& decision,
                                             const ProgramMetric& metric) {
  std::vector<const PolicyStats*> ranked;
  for (size_t i = 1; i < stats.size(); ++i) ranked.push_back(&stats[i]);
  // Qualified candidates best first, then the disqualified in their order.
  std::stable_sort(ranked.begin(), ranked.end(), [&](const PolicyStats* a, const PolicyStats* b) {
    if (a->disqualified.empty() != b->disqualified.empty()) return a->disqualified.empty();
    return a->disqualified.empty() && better(a->median, b->median, metric.higher_is_better());
  });
  ranked.insert(ranked.begin(), &stats[0]);
  const double base = stats[0].median;
  std::vector<ProgramPolicyLine> table;
  for (const PolicyStats* s : ranked) {
    ProgramPolicyLine line;
    line.policy = s->policy;
    line.status = s->candidate == 0 ? "baseline (no tandem)" : s->disqualified.empty() ? "ok" : "disqualified";
    if (decision.winner && stats[*decision.winner].candidate == s->candidate) line.status = "WINNER";
    if (!s->disqualified.empty()) line.status += ": " + s->disqualified;
    line.measured = !s->values.empty();
    line.median = s->median;
    line.min = s->min;
    line.max = s->max;
    line.spread = s->spread();
    if (line.measured && s->candidate != 0 && base != 0)
      line.vs_baseline_percent = 100.0 * (s->median - base) / std::fabs(base);
    table.push_back(line);
  }
  return table;
}

nlohmann::json program_tune_json(const ProgramTuneOptions& options, const ProgramTuneResult& result,
                                 const std::vector<PolicyStats>& stats, const ProgramDecision& decision) {
  const auto optional_number = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  const auto text_or_null = [](const std::string& s) { return s.empty() ? nlohmann::json() : nlohmann::json(s); };
  nlohmann::json runs = nlohmann::json::array();
  for (const ProgramRun& r : result.runs)
    runs.push_back({{"round", r.round},
                    {"position", r.position},
                    {"policy", r.candidate ? nlohmann::json(r.policy) : nlohmann::json()},
                    {"role", r.candidate ? "candidate" : "baseline"},
                    {"exit_status", r.process.exit_status},
                    {"timed_out", r.process.timed_out},
                    {"wall_s", r.process.wall_s},
                    {"metric_values", r.metric_values},
                    {"value", optional_number(r.value)},
                    {"failure", text_or_null(r.failure)},
                    {"log", r.log}});
  nlohmann::json policies = nlohmann::json::array();
  for (const PolicyStats& s : stats) {
    const bool measured = !s.values.empty();
    policies.push_back({{"policy", s.candidate ? nlohmann::json(s.policy) : nlohmann::json()},
                        {"role", s.candidate ? "candidate" : "baseline"},
                        {"values", s.values},
                        {"median", measured ? nlohmann::json(s.median) : nlohmann::json()},
                        {"min", measured ? nlohmann::json(s.min) : nlohmann::json()},
                        {"max", measured ? nlohmann::json(s.max) : nlohmann::json()},
                        {"spread", measured ? nlohmann::json(s.spread()) : nlohmann::json()},
                        {"disqualified", text_or_null(s.disqualified)}});
  }
  return {{"program", options.command},
          {"program_command", bench::shell_command(options.command)},
          {"metric",
           {{"regex", options.metric.is_wall_time() ? nlohmann::json() : nlohmann::json(options.metric.pattern())},
            {"value", options.metric.is_wall_time() ? "wall_s" : "median of the matches"},
            {"higher_is_better", options.metric.higher_is_better()}}},
          {"objective",
           {{"kind", to_string(options.objective == ObjectiveKind::Wall && !options.metric.is_wall_time()
                                   ? ObjectiveKind::Metric
                                   : options.objective)},
            {"step_range", options.step_range.empty() ? nlohmann::json() : nlohmann::json(options.step_range)}}},
          {"rounds", options.rounds},
          {"rounds_done", result.rounds_done},
          {"interrupted", result.interrupted},
          {"timeout_s", options.timeout_s > 0 ? nlohmann::json(options.timeout_s) : nlohmann::json()},
          {"logs", options.logs_dir},
          {"policies", policies},
          {"runs", runs},
          {"decision",
           {{"winner", decision.winner ? nlohmann::json(stats[*decision.winner].policy) : nlohmann::json()},
            {"reason", decision.reason}}}};
}

}  // namespace tandem::program_tools
