// `tandem tune`'s search for one case (tune_case), on fake trials that hand out scripted times: how the
// winner is picked from the final rounds (not from a lucky first measurement), the median round and
// its own baselines, duplicate removal in the finals, the paper's shaping level, skip notes.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "harness/tune_progress.h"
#include "harness/tuner.h"

namespace tandem::bench {
namespace {

constexpr int kRounds = 5;  // the final comparison's rounds (tuner.cu)

// Times by the policy's canonical text: the n-th measurement of a policy takes the n-th value of
// its script (the last value repeats); unscripted policies take 10 ms. t_seq records which
// baselines the row was measured against: 100 + the number of remeasure_baselines() calls so far.
class ScriptedTrials : public PolicyTrials {
 public:
  explicit ScriptedTrials(CaseTraits traits) : PolicyTrials(false), traits_(traits) {}

  std::map<std::string, std::vector<double>> script;
  std::map<std::string, std::string> refusals;  // policy text -> why it cannot apply
  std::vector<std::string> measured;            // every measurement, in order
  std::map<std::string, int> applied;           // apply() calls per policy
  int baselines = 0;

  CaseTraits traits() override { return traits_; }
  void remeasure_baselines() override { ++baselines; }
  int count(const std::string& policy) const { return int(std::count(measured.begin(), measured.end(), policy)); }

 protected:
  std::string apply(const OverlapPolicy& policy) override {
    const std::string text = to_string(policy);
    ++applied[text];
    const auto it = refusals.find(text);
    return it == refusals.end() ? "" : it->second;
  }
  void restore() override {}
  void check_and_measure(const OverlapPolicy& policy, Row& row) override {
    const std::string text = to_string(policy);
    const int n = count(text);
    measured.push_back(text);
    row.policy = text;
    row.t_seq_ms = 100 + baselines;
    const auto it = script.find(text);
    row.t_overlap_ms = it == script.end() ? 10.0 : it->second[std::min<size_t>(n, it->second.size() - 1)];
  }

 private:
  CaseTraits traits_;
};

CaseId stream_case(bool collects = true) {
  CaseId id;
  id.workload = "stream";
  id.collective = "all-reduce";
  id.bytes = 64 << 20;
  id.nranks = 2;
  id.collects = collects;
  return id;
}

CaseTraits shapeable(int natural_blocks_per_sm) {
  CaseTraits t;
  t.sm_count = 132;
  t.natural_blocks_per_sm = natural_blocks_per_sm;
  return t;
}

// The script of the main case, a kernel with 4 blocks/SM:
//   - the paper's levels: shape:2+priority 5 ms beats shape:3 (5.5 in the search), shape:1 (7),
//     shape:auto (8) and priority alone (6): the paper's pick is shape:2+priority;
//   - shape:2+priority+nccl-symmetric is lucky once (1 ms in the search) and 9 ms after: the
//     search's best and a finalist, but not the winner;
//   - shape:3+priority once reaches 2 ms in the finals, its median is 6: a minimum must not win;
//   - shape:2+priority's final rounds take 5.2, 4.9, 5.0, 5.3, 5.1: its median, 5.1, is round 5's.
struct MainCase {
  ScriptedTrials trials{shapeable(4)};
  BenchOptions options;
  std::vector<std::string> notes;
  TunedCase result;

  MainCase() {
    trials.script = {
        {"concurrent", {9}},
        {"priority", {6}},
        {"shape:auto+priority", {8}},
        {"shape:1+priority", {7}},
        {"shape:2+priority", {5, 5.2, 4.9, 5.0, 5.3, 5.1}},
        {"shape:3+priority", {5.5, 2, 6, 6, 6, 6}},
        {"shape:2+priority+nccl-symmetric", {1, 9}},
    };
    trials.refusals = {{"comm-first+priority", "refused by the test"}};
    result = tune_case(trials, options, stream_case(), notes);
  }
};

TEST(TunerSearch, TheWinnerIsTheBestMedianOfTheFinalRoundsNotTheLuckiestFirstMeasurement) {
  MainCase c;
  EXPECT_EQ(c.result.tuned.policy, "shape:2+priority");
  EXPECT_DOUBLE_EQ(c.result.tuned.t_overlap_ms, 5.1);
  EXPECT_TRUE(c.result.tuned.tuned);
  EXPECT_EQ(c.result.tuned.tune_role, "tuned");
  // The lucky policy was the search's best: the stages after it were built on top of it.
  EXPECT_EQ(c.trials.count("shape:2+priority+nccl-symmetric"), 1 + kRounds);
  EXPECT_EQ(c.trials.count("shape:2+priority+copy-engine"), 1);
  // Stage 3 tries every launch order and priority on top of it.
  for (const char* order :
       {"shape:2+nccl-symmetric", "comm-first+shape:2+nccl-symmetric", "comm-first+shape:2+priority+nccl-symmetric"})
    EXPECT_EQ(c.trials.count(order), 1) << order;
}

TEST(TunerSearch, EachFinalRowIsItsMedianRoundWithThatRoundsBaselines) {
  MainCase c;
  EXPECT_EQ(c.trials.baselines, kRounds);  // once per round, before the round's policies
  // 5.1 was measured in the fifth round, after the fifth remeasurement of the baselines.
  EXPECT_DOUBLE_EQ(c.result.tuned.t_seq_ms, 105);
  // The naive policy: 9 ms every round; its median round is the third (sorted stably by time).
  EXPECT_EQ(c.result.naive.policy, "concurrent");
  EXPECT_EQ(c.result.naive.tune_role, "naive");
  EXPECT_DOUBLE_EQ(c.result.naive.t_overlap_ms, 9);
  EXPECT_GE(c.result.naive.t_seq_ms, 101);
  EXPECT_LE(c.result.naive.t_seq_ms, 105);
}

TEST(TunerSearch, ThePapersMethodIsItsBestMeasuredShapingLevelWithPriority) {
  MainCase c;
  EXPECT_EQ(c.result.paper.policy, "shape:2+priority");
  EXPECT_EQ(c.result.paper.tune_role, "paper");
  for (const char* level : {"shape:auto+priority", "shape:1+priority", "shape:2+priority", "shape:3+priority"})
    EXPECT_GE(c.trials.count(level), 1) << level;
}

TEST(TunerSearch, FinalsMeasureEachDistinctPolicyOncePerRound) {
  MainCase c;
  // Finalists: the lucky one (1), shape:2+priority (5), shape:3+priority (5.5); then concurrent
  // and the paper's pick, which is shape:2+priority again: measured once per round, not twice.
  EXPECT_EQ(c.trials.count("shape:2+priority"), 1 + kRounds);
  EXPECT_EQ(c.trials.count("shape:3+priority"), 1 + kRounds);
  EXPECT_EQ(c.trials.count("concurrent"), 1 + kRounds);
  EXPECT_EQ(c.trials.count("priority"), 1);  // not a finalist
  // Nothing in the search is measured twice.
  const size_t search_measurements = c.trials.measured.size() - 4 * kRounds;
  std::vector<std::string> search(c.trials.measured.begin(), c.trials.measured.begin() + search_measurements);
  std::vector<std::string> distinct = search;
  std::sort(distinct.begin(), distinct.end());
  EXPECT_EQ(std::unique(distinct.begin(), distinct.end()), distinct.end());
  // The candidates are the search's rows, in the order tried: launch orders first.
  ASSERT_EQ(c.result.candidates.size(), search.size());
  ASSERT_GE(search.size(), 3u);
  EXPECT_EQ(search[0], "concurrent");
  EXPECT_EQ(search[1], "priority");
  EXPECT_EQ(search[2], "comm-first");
}

TEST(TunerSearch, PoliciesThatCannotApplyBecomeNotesAndAreNotRetried) {
  MainCase c;
  EXPECT_EQ(c.trials.count("comm-first+priority"), 0);
  EXPECT_EQ(c.trials.applied["comm-first+priority"], 1);
  EXPECT_NE(std::find(c.notes.begin(), c.notes.end(),
                      "stream all-reduce: comm-first+priority not applicable: refused by the test"),
            c.notes.end());
  EXPECT_EQ(c.notes.size(), 1u);

  // A rank that does not collect results leaves the notes to the one that does.
  ScriptedTrials quiet(shapeable(4));
  quiet.refusals = {{"comm-first+priority", "refused by the test"}};
  std::vector<std::string> notes;
  tune_case(quiet, BenchOptions{}, stream_case(false), notes);
  EXPECT_TRUE(notes.empty());
}

// An interrupted search keeps its fastest policy so far: each policy that beats every earlier one is
// reported once, in the order measured, on the collecting rank only. In the main case's script the
// search meets concurrent (9), priority (6), shape:2+priority (5) and the lucky nccl-symmetric (1)
// as successive records; nothing later beats 1 ms.
TEST(TunerSearch, EachNewFastestPolicyIsReportedAsTheBestSoFar) {
  MainCase c;  // the script, measured once more below with a sink
  ScriptedTrials trials{shapeable(4)};
  trials.script = c.trials.script;
  trials.refusals = c.trials.refusals;
  std::vector<std::pair<std::string, double>> reported;
  std::vector<std::string> notes;
  tune_case(trials, BenchOptions{}, stream_case(), notes,
            [&](const Row& best) { reported.emplace_back(best.policy, best.t_overlap_ms); });
  ASSERT_FALSE(reported.empty());
  for (size_t i = 1; i < reported.size(); ++i)
    EXPECT_LT(reported[i].second, reported[i - 1].second) << reported[i].first << " is no new best";
  EXPECT_EQ(reported.back(), std::make_pair(std::string("shape:2+priority+nccl-symmetric"), 1.0));
  EXPECT_NE(std::find(reported.begin(), reported.end(), std::make_pair(std::string("shape:2+priority"), 5.0)),
            reported.end());

  ScriptedTrials quiet{shapeable(4)};
  quiet.script = c.trials.script;
  quiet.refusals = c.trials.refusals;
  size_t calls = 0;
  tune_case(quiet, BenchOptions{}, stream_case(false), notes, [&](const Row&) { ++calls; });
  EXPECT_EQ(calls, 0u) << "only the rank that collects results reports";
}

// Nothing to shape (a library kernel): the paper's method is priority alone. Priority is also the
// fastest, so the finals hold it twice and concurrent once: concurrent and priority differ only in
// comm_priority, and must stay two policies.
TEST(TunerSearch, WithoutShapingThePaperIsPriorityAndConcurrentStaysApart) {
  ScriptedTrials trials(shapeable(0));
  trials.script = {{"concurrent", {9}}, {"priority", {3}}};
  std::vector<std::string> notes;
  const TunedCase r = tune_case(trials, BenchOptions{}, stream_case(), notes);
  EXPECT_EQ(r.paper.policy, "priority");
  EXPECT_EQ(r.tuned.policy, "priority");
  EXPECT_EQ(r.naive.policy, "concurrent");
  EXPECT_DOUBLE_EQ(r.naive.t_overlap_ms, 9);
  EXPECT_EQ(trials.count("priority"), 1 + kRounds);
  EXPECT_EQ(trials.count("concurrent"), 1 + kRounds);
  for (const auto& policy : trials.measured) EXPECT_EQ(policy.find("shape"), std::string::npos) << policy;
}

// The progress lines within a case (tune_progress.h): one per measured policy and one per final
// round, the counter climbing by one, the best so far named, and the time left from the average time
// per measured policy (here exactly 1 s each; a final round measures five policies).
TEST(TuneProgressLines, OneLinePerStepWithTheBestSoFarAndTheTimeLeft) {
  MainCase c;
  ScriptedTrials trials{shapeable(4)};
  trials.script = c.trials.script;
  trials.refusals = c.trials.refusals;
  TuneProgress progress(2);
  progress.start_case(1, "stream all-reduce 64MiB", 30);
  std::vector<std::string> lines;
  double clock = 0;
  std::vector<std::string> notes;
  tune_case(trials, BenchOptions{}, stream_case(), notes, {}, [&](const TuneStep& step) {
    clock += step.final_round ? 5 : 1;
    lines.push_back(progress.step_line(step, clock));
  });
  const size_t searched = std::set<std::string>(trials.measured.begin(), trials.measured.end()).size();
  ASSERT_EQ(lines.size(), searched + kRounds);

  const std::regex search_line(
      R"(\[1/2\] stream all-reduce 64MiB: (\d+)/~(\d+) policies, best so far (\S+) [0-9.]+ ms, ~.* left in this case, ~.* in all)");
  for (size_t i = 0; i < searched; ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(lines[i], m, search_line)) << lines[i];
    EXPECT_EQ(std::stoul(m[1]), i + 1) << lines[i];
    EXPECT_GT(std::stoul(m[2]), i + 1) << "the estimate stays above the count: " << lines[i];
  }
  EXPECT_NE(lines[searched - 1].find("best so far shape:2+priority+nccl-symmetric 1.00 ms"), std::string::npos)
      << lines[searched - 1];
  for (int r = 1; r <= kRounds; ++r)
    EXPECT_EQ(
        lines[searched + r - 1].rfind("[1/2] stream all-reduce 64MiB: final round " + std::to_string(r) + "/5, ", 0),
        0u)
        << lines[searched + r - 1];
  // After the last round nothing is left in this case; the next case is expected to take as long.
  const size_t next_case_s = searched + 5 * kRounds;
  ASSERT_LT(next_case_s, 90u);  // shown in seconds
  EXPECT_NE(lines.back().find("~0 s left in this case, ~" + std::to_string(next_case_s) + " s in all"),
            std::string::npos)
      << lines.back();

  progress.start_case(2, "stream all-reduce 128MiB", 30);
  TuneStep first;
  first.measured = 1;
  EXPECT_NE(progress.step_line(first, clock + 1)
                .find("[2/2] stream all-reduce 128MiB: 1/~" + std::to_string(searched) + " policies"),
            std::string::npos);
}

TEST(TuneProgressLines, DurationsInSecondsMinutesOrHours) {
  EXPECT_EQ(duration_text(25), "25 s");
  EXPECT_EQ(duration_text(360), "6 min");
  EXPECT_EQ(duration_text(2.5 * 3600), "2.5 h");
}

}  // namespace
}  // namespace tandem::bench
