// The rules of `tandem tune -- CMD` (harness/program_tuner.h), each on its edge: a candidate wins only
// when its gain over the baseline is larger than the two spreads added (not the larger one, not one
// of them, not equal), over the same rounds as the baseline. Expected values are worked out by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "harness/program_tuner.h"

namespace {

using tandem::bench::decide_program_policy;
using tandem::bench::PolicyStats;

// min, median and max of `values` (three or fewer, median given).
PolicyStats stats(int candidate, const std::string& policy, std::vector<double> values, double median) {
  PolicyStats s;
  s.candidate = candidate;
  s.policy = policy;
  s.values = values;
  s.median = median;
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  return s;
}

std::string winner(const std::vector<PolicyStats>& all, bool higher_is_better = false) {
  const auto d = decide_program_policy(all, higher_is_better);
  return d.winner ? all[*d.winner].policy : "none";
}

TEST(program_tune_rules, TheGainMustExceedBothSpreadsAdded) {
  // Baseline 100, spread 10 (95..105). Each candidate has spread 10 (its median +-5).
  const PolicyStats base = stats(0, "baseline", {95, 100, 105}, 100);
  // Gain 15: more than either spread, not more than both added (20): noise.
  EXPECT_EQ(winner({base, stats(1, "a", {80, 85, 90}, 85)}), "none");
  // Gain 21: beyond the noise.
  EXPECT_EQ(winner({base, stats(1, "a", {74, 79, 84}, 79)}), "a");
}

TEST(program_tune_rules, AGainEqualToTheSpreadsIsNoGain) {
  // Gain 20, spreads 10 + 10.
  const PolicyStats base = stats(0, "baseline", {95, 100, 105}, 100);
  EXPECT_EQ(winner({base, stats(1, "a", {75, 80, 85}, 80)}), "none");
  // Higher is better, the same edge.
  EXPECT_EQ(winner({base, stats(1, "a", {115, 120, 125}, 120)}, true), "none");
}

TEST(program_tune_rules, TheCandidatesOwnSpreadCounts) {
  // Baseline without spread (100 every round); the candidate gains 12 with a spread of 30.
  const PolicyStats steady = stats(0, "baseline", {100, 100, 100}, 100);
  EXPECT_EQ(winner({steady, stats(1, "noisy", {70, 88, 100}, 88)}), "none");
  EXPECT_EQ(winner({steady, stats(1, "steady", {88, 88, 88}, 88)}), "steady");
}

TEST(program_tune_rules, TheDirectionFollowsTheMetric) {
  const PolicyStats base = stats(0, "baseline", {100, 100, 100}, 100);
  const PolicyStats lower = stats(1, "lower", {90, 90, 90}, 90), higher = stats(2, "higher", {110, 110, 110}, 110);
  EXPECT_EQ(winner({base, lower, higher}, false), "lower");
  EXPECT_EQ(winner({base, lower, higher}, true), "higher");
}

TEST(program_tune_rules, OnlyCandidatesMeasuredInEveryRoundCompare) {
  // A candidate with fewer values than the baseline (it missed a round) is not compared.
  const PolicyStats base = stats(0, "baseline", {100, 100, 100}, 100);
  EXPECT_EQ(winner({base, stats(1, "partial", {50, 50}, 50), stats(2, "whole", {95, 95, 95}, 95)}), "whole");
  EXPECT_EQ(winner({base, stats(1, "partial", {50, 50}, 50)}), "none");
}

}  // namespace
