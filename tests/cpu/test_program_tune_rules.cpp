// The rules of `tandem tune -- CMD` (program_tools/program_tune_decision.h), each on its edge: a candidate wins only
// when its gain over the baseline is larger than the two spreads added (not the larger one, not one
// of them, not equal), over the same rounds as the baseline; a run's time limit; and the --json
// document's values. Expected values are worked out by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "program_tools/program_tune_decision.h"
#include "program_tools/program_tune_results.h"
#include "program_tools/program_tuner.h"
#include "program_tune_stats.h"

namespace {

using json = nlohmann::json;
using tandem::program_tools::decide_program_policy;
using tandem::program_tools::PolicyStats;
using tandem::program_tools::ProgramRun;
using tandem::program_tools::ProgramTuneOptions;
using tandem::program_tools::ProgramTuneResult;
using tandem::program_tools::run_time_limit;

using tandem_test::stats;

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

// ---- a run's time limit -------------------------------------------------------------------------

ProgramRun finished(int round, int candidate, double wall_s) {
  ProgramRun r;
  r.round = round;
  r.candidate = candidate;
  r.process.wall_s = wall_s;
  return r;
}

TEST(program_tune_rules, ACandidatesLimitIsThreeTimesTheSlowestBaselinePlusAMinute) {
  ProgramTuneOptions o;  // no --timeout
  // Baselines of 10, 30 and 20 s; candidates' own times (100 s) do not count.
  const std::vector<ProgramRun> runs = {finished(1, 0, 10), finished(1, 1, 100), finished(2, 0, 30),
                                        finished(2, 1, 100), finished(3, 0, 20)};
  EXPECT_DOUBLE_EQ(run_time_limit(o, runs, true), 3 * 30 + 60);
  // The baseline itself runs without a limit: it is what the limit is measured on.
  EXPECT_DOUBLE_EQ(run_time_limit(o, runs, false), 0);
  // Before any baseline: the minute alone.
  EXPECT_DOUBLE_EQ(run_time_limit(o, {}, true), 60);
}

TEST(program_tune_rules, TimeoutLimitsEveryRun) {
  ProgramTuneOptions o;
  o.timeout_s = 7.5;
  const std::vector<ProgramRun> runs = {finished(1, 0, 100)};
  EXPECT_DOUBLE_EQ(run_time_limit(o, runs, true), 7.5);
  EXPECT_DOUBLE_EQ(run_time_limit(o, runs, false), 7.5);
}

// ---- the --json document ----------------------------------------------------------------------------

TEST(program_tune_rules, TheJsonHasTheRunsAndStatisticsValues) {
  ProgramTuneOptions o;
  o.command = {"./train", "--steps", "5"};
  o.candidates = {tandem::parse_policy("priority")};
  o.rounds = 3;
  o.timeout_s = 90;
  o.logs_dir = "/tmp/logs";
  ProgramTuneResult result;
  result.rounds_done = 2;
  result.interrupted = true;
  // Two rounds: baseline 10.5 then 11.5 s, priority 8 then 9 s; round 2 runs the candidate first.
  const auto run = [](int round, int position, int candidate, double value, int status) {
    ProgramRun r = finished(round, candidate, value + 0.25);
    r.position = position;
    r.policy = candidate ? "priority" : "";
    r.value = value;
    r.metric_values = {value, value + 100};
    r.process.exit_status = status;
    r.log = "/tmp/logs/round" + std::to_string(round) + "-" + (candidate ? "priority" : "baseline") + ".log";
    return r;
  };
  result.runs = {run(1, 1, 0, 10.5, 3), run(1, 2, 1, 8, 3), run(2, 2, 0, 11.5, 3), run(2, 1, 1, 9, 3)};
  result.runs[3].process.timed_out = true;  // only to see the field carried (a real one would have a failure)
  const auto stats = tandem::program_tools::program_stats(o, result);
  const auto decision = decide_program_policy(stats, false);
  const json doc = tandem::program_tools::program_tune_json(o, result, stats, decision);
  EXPECT_EQ(doc["program"], json({"./train", "--steps", "5"}));
  EXPECT_EQ(doc["rounds"], 3);
  EXPECT_EQ(doc["rounds_done"], 2);
  EXPECT_EQ(doc["interrupted"], true);
  EXPECT_EQ(doc["timeout_s"], 90.0);
  EXPECT_EQ(doc["logs"], "/tmp/logs");
  // The baseline: 10.5 and 11.5 (median 11, spread 1); priority 8 and 9 (median 8.5, spread 1): gain 2.5 > 2.
  const json& base = doc["policies"][0];
  EXPECT_TRUE(base["policy"].is_null());
  EXPECT_EQ(base["role"], "baseline");
  EXPECT_EQ(base["values"], json({10.5, 11.5}));
  EXPECT_EQ(base["median"], 11.0);
  EXPECT_EQ(base["min"], 10.5);
  EXPECT_EQ(base["max"], 11.5);
  EXPECT_EQ(base["spread"], 1.0);
  const json& priority = doc["policies"][1];
  EXPECT_EQ(priority["policy"], "priority");
  EXPECT_EQ(priority["role"], "candidate");
  EXPECT_EQ(priority["values"], json({8.0, 9.0}));
  EXPECT_EQ(priority["median"], 8.5);
  EXPECT_EQ(priority["min"], 8.0);
  EXPECT_EQ(priority["max"], 9.0);
  EXPECT_TRUE(priority["disqualified"].is_null());
  EXPECT_EQ(doc["decision"]["winner"], "priority");
  // Each run as it went: round, place in the round, role, status, time, values, log.
  const json& last = doc["runs"][3];
  EXPECT_EQ(last["round"], 2);
  EXPECT_EQ(last["position"], 1);
  EXPECT_EQ(last["policy"], "priority");
  EXPECT_EQ(last["role"], "candidate");
  EXPECT_EQ(last["exit_status"], 3);
  EXPECT_EQ(last["timed_out"], true);
  EXPECT_EQ(last["wall_s"], 9.25);
  EXPECT_EQ(last["metric_values"], json({9.0, 109.0}));
  EXPECT_EQ(last["value"], 9.0);
  EXPECT_TRUE(last["failure"].is_null());
  EXPECT_EQ(last["log"], "/tmp/logs/round2-priority.log");
  EXPECT_EQ(doc["runs"][0]["timed_out"], false);
  EXPECT_TRUE(doc["runs"][0]["policy"].is_null());
}

}  // namespace
