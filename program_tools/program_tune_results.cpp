#include "program_tools/program_tune_results.h"

#include <algorithm>
#include <cmath>

#include "tandem/text.h"

namespace tandem::program_tools {

std::string measure_text(const ProgramTuneOptions& o) {
  return from_timeline(o.objective) ? describe(o.objective, o.step_range) : o.metric.describe();
}

ProgramTuneContext tune_context(const bench::RunInfo& info, const ProgramTuneOptions& o) {
  ProgramTuneContext context;
  context.info = info;
  context.program = bench::shell_command(o.command);
  context.metric = measure_text(o);
  context.rounds = o.rounds;
  context.candidates = o.candidates.size();
  context.timeout_s = o.timeout_s;
  context.logs = o.logs_dir;
  return context;
}

std::string run_progress_line(const ProgramTuneOptions& o, const ProgramRun& run, const ProgramTuneResult& result,
                              double elapsed_s) {
  const size_t runs_in_all = static_cast<size_t>(o.rounds) * (o.candidates.size() + 1);
  const size_t done = result.runs.size();
  std::string line = "round " + std::to_string(run.round) + "/" + std::to_string(o.rounds) + ", run " +
                     std::to_string(done) + "/" + std::to_string(runs_in_all) + ": " +
                     (run.candidate ? run.policy : "baseline") + " ";
  line += run.value ? number(*run.value) : "disqualified: " + run.failure;
  if (result.rounds_done > 0) {  // as the benchmark tune's lines: the best so far, over finished rounds
    const auto stats = program_stats(o, result);
    const auto decision = decide_program_policy(stats, o.metric.higher_is_better());
    line += decision.winner
                ? ", best so far " + stats[*decision.winner].policy + " " + number(stats[*decision.winner].median)
                : ", best so far the baseline";
    line += " (baseline " + number(stats[0].median) + ")";
  }
  line += ", ~" +
          bench::duration_text(elapsed_s / static_cast<double>(done) * static_cast<double>(runs_in_all - done)) +
          " left";
  return line;
}

OverlapPolicy chosen_policy(const std::vector<PolicyStats>& stats, const ProgramDecision& decision) {
  return parse_policy(decision.winner ? stats[*decision.winner].policy : "concurrent");
}

std::vector<std::string> policy_file_lines(const ProgramTuneOptions& o, const ProgramTuneResult& result,
                                           const std::vector<PolicyStats>& stats, const ProgramDecision& decision,
                                           bool finished) {
  std::vector<std::string> lines = {"program " + bench::shell_command(o.command),
                                    "measured by " + measure_text(o) +
                                        "; baseline (the program without tandem) "
                                        "median " +
                                        number(stats[0].median) + " over " + std::to_string(result.rounds_done) +
                                        " rounds"};
  if (!finished)
    lines.push_back("UNFINISHED search: " + std::to_string(result.rounds_done) + " of " + std::to_string(o.rounds) +
                    " rounds done; the best so far, not yet confirmed by the remaining rounds");
  if (decision.winner) {
    const auto& w = stats[*decision.winner];
    lines.push_back(w.policy + ": median " + number(w.median) + " (spread " + number(w.spread()) + "); " +
                    decision.reason);
  } else {
    lines.push_back(decision.reason);
    lines.push_back("so this file holds `concurrent`: tandem run applies no control, the program runs as without it");
  }
  return lines;
}

std::vector<ProgramPolicyLine> program_table(const std::vector<PolicyStats>& stats, const ProgramDecision& decision,
                                             const ProgramMetric& metric) {
  std::vector<const PolicyStats*> ranked;
  for (size_t i = 1; i < stats.size(); ++i) ranked.push_back(&stats[i]);
  // Qualified candidates best first, then the disqualified in their order.
  std::stable_sort(ranked.begin(), ranked.end(), [&](const PolicyStats* a, const PolicyStats* b) {
    if (a->disqualified.empty() != b->disqualified.empty()) return a->disqualified.empty();
    return a->disqualified.empty() && is_better(a->median, b->median, metric.higher_is_better());
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

nlohmann::json program_tune_document(const bench::RunInfo& info, const std::string& policy_file,
                                     const ProgramTuneOptions& options, const ProgramTuneResult& result,
                                     const std::vector<PolicyStats>& stats, const ProgramDecision& decision,
                                     bool complete) {
  nlohmann::json doc = {{"schema_version", bench::kBenchJsonSchemaVersion},
                        {"complete", complete},
                        {"tool", info.tool},
                        {"tandem_version", info.tandem_version},
                        {"commit", info.commit},
                        {"command", info.command},
                        {"date", info.date},
                        {"policy_file", policy_file}};
  doc.update(program_tune_json(options, result, stats, decision));
  return doc;
}

ProgramTuneEnd tune_end(const ProgramTuneOptions& options, const ProgramTuneResult& result,
                        const std::vector<PolicyStats>& stats, const ProgramDecision& decision) {
  ProgramTuneEnd end;
  end.finished = !result.interrupted;
  end.rounds_done = result.rounds_done;
  end.rounds = options.rounds;
  end.runs = result.runs.size();
  end.table = program_table(stats, decision, options.metric);
  end.baseline_exit_status = result.runs.empty() ? 0 : result.runs.front().process.exit_status;
  end.decision = decision.reason;
  end.logs = options.logs_dir;
  if (decision.winner) end.winner = stats[*decision.winner].policy;
  return end;
}

}  // namespace tandem::program_tools
