#include "program_tools/program_tune_decision.h"

#include <algorithm>
#include <cmath>

#include "report/report.h"
#include "tandem/error.h"
#include "tandem/overlap.h"
#include "tandem/text.h"

namespace tandem::program_tools {
namespace {

std::string percent_text(double gain, double reference) {
  return reference == 0 ? "" : bench::format(" (%.1f %%)", 100.0 * gain / std::fabs(reference));
}

}  // namespace

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
      if (!d.winner || is_better(c.median, stats[*d.winner].median, higher_is_better)) d.winner = i;
    } else if (!closest || is_better(c.median, closest->median, higher_is_better)) {
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

}  // namespace tandem::program_tools
