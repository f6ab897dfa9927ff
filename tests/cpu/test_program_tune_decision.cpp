// The program tuner's pure parts: the metric found in a run's output, the decision over per-policy
// statistics, and the run logs' names. Expected values are worked out by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "program_tools/program_metric.h"
#include "program_tools/program_tune_decision.h"
#include "program_tools/run_logs.h"
#include "program_tune_stats.h"
#include "tandem/error.h"

namespace {

using tandem::program_tools::decide_program_policy;
using tandem::program_tools::PolicyStats;
using tandem::program_tools::ProgramMetric;

using tandem_test::stats;

TEST(program_metric, FindsEveryMatchPerLineCarriageReturnsIncluded) {
  const ProgramMetric metric("step ([^ ]+) ms", false);
  std::vector<std::string> not_numbers;
  // A progress bar redraws with '\r'; each redraw is a line of its own.
  const auto values = metric.values_in_text("step 1.5 ms\rstep 2 ms\nnoise\nstep x ms step 3e1 ms\n", &not_numbers);
  EXPECT_EQ(values, (std::vector<double>{1.5, 2, 30}));
  EXPECT_EQ(not_numbers, (std::vector<std::string>{"x"}));
}

TEST(program_metric, AVeryLongLineIsSearchedWithoutExhaustingTheStack) {
  const ProgramMetric metric("v=([0-9]+)", false);
  const std::string text = "v=1" + std::string(1 << 20, 'a') + "v=2\nv=3\n";
  EXPECT_EQ(metric.values_in_text(text), (std::vector<double>{1, 2, 3}));
}

TEST(program_metric, RefusesPatternsWithoutExactlyOneCaptureGroup) {
  EXPECT_THROW(ProgramMetric("no group", false), tandem::UserError);
  EXPECT_THROW(ProgramMetric("(a)(b)", false), tandem::UserError);
  EXPECT_THROW(ProgramMetric("(", false), tandem::UserError);
  EXPECT_NO_THROW(ProgramMetric("(?:a|b) ([0-9]+)", false));
}

TEST(program_decision, TheBestMedianAmongThoseBeyondTheSpreadsWins) {
  // Baseline median 100, spread 10. a: 85 with spread 20 (gain 15 < 30); b: 88, spread 0 (12 > 10);
  // c: 80 but disqualified; d: 89, spread 0 (11 > 10, worse than b).
  const std::vector<PolicyStats> all = {
      stats(0, "baseline", {95, 100, 105}, 100), stats(1, "a", {75, 85, 95}, 85), stats(2, "b", {88, 88, 88}, 88),
      stats(3, "c", {80, 80, 80}, 80, "round 2: timed out"), stats(4, "d", {89, 89, 89}, 89)};
  const auto d = decide_program_policy(all, false);
  ASSERT_TRUE(d.winner.has_value());
  EXPECT_EQ(all[*d.winner].policy, "b");
  EXPECT_NE(d.reason.find("b beats the baseline by 12 (12.0 %)"), std::string::npos) << d.reason;
}

TEST(program_decision, HigherIsBetterAndNoWinnerNamesTheClosest) {
  const std::vector<PolicyStats> all = {stats(0, "baseline", {100, 100}, 100), stats(1, "a", {90, 90}, 90),
                                        stats(2, "b", {105, 99}, 102)};
  // Higher is better: b gains 2, its spread is 6: no winner; b is the closest.
  const auto d = decide_program_policy(all, true);
  EXPECT_FALSE(d.winner.has_value());
  EXPECT_NE(d.reason.find("no policy beats the baseline by more than the spreads; the best, b,"), std::string::npos)
      << d.reason;
  // Lower is better: a gains 10 with no spread.
  const auto lower = decide_program_policy(all, false);
  ASSERT_TRUE(lower.winner.has_value());
  EXPECT_EQ(all[*lower.winner].policy, "a");
}

TEST(program_decision, RunLogNamesAreFileNames) {
  EXPECT_EQ(tandem::program_tools::program_run_log_name(2, "baseline"), "round2-baseline.log");
  EXPECT_EQ(tandem::program_tools::program_run_log_name(1, "priority+nccl-ctas:..4"),
            "round1-priority+nccl-ctas-..4.log");
  EXPECT_EQ(tandem::program_tools::program_run_log_name(3, "a/b c"), "round3-a_b_c.log");
}

}  // namespace
