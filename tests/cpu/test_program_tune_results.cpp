// What a program tune's runs come to in each of its outputs (program_tools/program_tune_results.h):
// the header's context, a run's progress line, the policy file's lines and policy, the --json
// document's description and the end's report. One finished round of two, worked out by hand: the
// baseline 100, priority 90 (the winner: a gain of 10 against spreads of 0), shape:2 disqualified.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "program_tools/program_tune_results.h"

namespace tandem::program_tools {
namespace {

using json = nlohmann::json;

ProgramTuneOptions options() {
  ProgramTuneOptions o;
  o.command = {"./train", "--steps", "3"};
  o.candidates = parse_policy_list("priority,shape:2");
  o.rounds = 2;
  o.logs_dir = "/tmp/logs";
  return o;
}

ProgramRun run(int position, int candidate, const std::string& policy, std::optional<double> value) {
  ProgramRun r;
  r.round = 1;
  r.position = position;
  r.candidate = candidate;
  r.policy = policy;
  r.value = value;
  r.process.exit_status = 0;
  if (!value) r.failure = "timed out after 60 s (see /tmp/logs/round1-shape-2.log)";
  return r;
}

ProgramTuneResult one_round() {
  ProgramTuneResult result;
  result.runs = {run(1, 0, "", 100), run(2, 1, "priority", 90), run(3, 2, "shape:2", std::nullopt)};
  result.rounds_done = 1;
  return result;
}

TEST(program_tune_results, TheProgressLineSaysTheRunTheBestSoFarAndTheTimeLeft) {
  const ProgramTuneResult result = one_round();
  // 3 of 2 x 3 runs done in 30 s: 30 s left at that pace.
  EXPECT_EQ(run_progress_line(options(), result.runs.back(), result, 30),
            "round 1/2, run 3/6: shape:2 disqualified: timed out after 60 s (see /tmp/logs/round1-shape-2.log), best "
            "so far priority 90 (baseline 100), ~30 s left");
  ProgramTuneResult first = result;
  first.runs.resize(1);
  first.rounds_done = 0;  // no round finished: nothing to compare yet
  EXPECT_EQ(run_progress_line(options(), first.runs.back(), first, 10), "round 1/2, run 1/6: baseline 100, ~50 s left");
}

TEST(program_tune_results, ThePolicyFileSaysWhatWasMeasuredAndThatTheSearchIsUnfinished) {
  const ProgramTuneOptions o = options();
  const ProgramTuneResult result = one_round();
  const auto stats = program_stats(o, result);
  const auto decision = decide_program_policy(stats, false);
  EXPECT_EQ(to_string(chosen_policy(stats, decision)), "priority");
  EXPECT_EQ(policy_file_lines(o, result, stats, decision, false),
            (std::vector<std::string>{
                "program ./train --steps 3",
                "measured by wall time (s), lower is better; baseline (the program without tandem) median 100 over 1 "
                "rounds",
                "UNFINISHED search: 1 of 2 rounds done; the best so far, not yet confirmed by the remaining rounds",
                "priority: median 90 (spread 0); priority beats the baseline by 10 (10.0 %), more than the spreads "
                "added (0 + 0)"}));
  // No winner: the file holds `concurrent`, and says why.
  const ProgramDecision none{std::nullopt, "no policy beats the baseline: every candidate was disqualified"};
  EXPECT_EQ(to_string(chosen_policy(stats, none)), "concurrent");
  const auto lines = policy_file_lines(o, result, stats, none, true);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[2], none.reason);
  EXPECT_EQ(lines[3], "so this file holds `concurrent`: tandem run applies no control, the program runs as without it");
}

TEST(program_tune_results, TheJsonDocumentIsDescribedAndComplete) {
  const ProgramTuneOptions o = options();
  const ProgramTuneResult result = one_round();
  const auto stats = program_stats(o, result);
  bench::RunInfo info;
  info.tool = "tune-program";
  info.tandem_version = "0.1.0";
  info.commit = "abc";
  info.command = "tandem tune -- ./train --steps 3";
  info.date = "2026-12-02T00:00:00Z";
  const json doc =
      program_tune_document(info, "tuned.policy", o, result, stats, decide_program_policy(stats, false), false);
  EXPECT_EQ(doc["schema_version"], bench::kBenchJsonSchemaVersion);
  EXPECT_EQ(doc["complete"], false);
  EXPECT_EQ(doc["tool"], "tune-program");
  EXPECT_EQ(doc["command"], "tandem tune -- ./train --steps 3");
  EXPECT_EQ(doc["policy_file"], "tuned.policy");
  EXPECT_EQ(doc["decision"]["winner"], "priority");
  EXPECT_EQ(doc["runs"].size(), 3u);
}

TEST(program_tune_results, TheHeaderAndTheEndCarryTheTunesFigures) {
  const ProgramTuneOptions o = options();
  const ProgramTuneResult result = one_round();
  bench::RunInfo info;
  info.tool = "tune-program";
  const ProgramTuneContext context = tune_context(info, o);
  EXPECT_EQ(context.info.tool, "tune-program");
  EXPECT_EQ(context.program, "./train --steps 3");
  EXPECT_EQ(context.metric, "wall time (s), lower is better");
  EXPECT_EQ(context.rounds, 2);
  EXPECT_EQ(context.candidates, 2u);
  EXPECT_EQ(context.logs, "/tmp/logs");

  const auto stats = program_stats(o, result);
  const ProgramTuneEnd end = tune_end(o, result, stats, decide_program_policy(stats, false));
  EXPECT_TRUE(end.finished);
  EXPECT_EQ(end.rounds_done, 1);
  EXPECT_EQ(end.rounds, 2);
  EXPECT_EQ(end.runs, 3u);
  EXPECT_EQ(end.winner, "priority");
  ASSERT_EQ(end.table.size(), 3u);
  EXPECT_EQ(end.table[0].status, "baseline (no tandem)");
  EXPECT_EQ(end.table[1].status, "WINNER");
  EXPECT_EQ(end.logs, "/tmp/logs");
  EXPECT_TRUE(end.policy_file.empty()) << "the caller's, once the file is written";
}

}  // namespace
}  // namespace tandem::program_tools
