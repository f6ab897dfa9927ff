// The steps of a program's NVTX ranges (tandem::outermost_ranges) and the job's figures over ranks
// (tandem::job_figures): the slowest rank's step, the span over ranks on the job's clock, ranks with
// different step counts and lost records summed.
#include <gtest/gtest.h>

#include "tandem/overlap.h"

namespace tandem {
namespace {

RankFigures rank_with(std::vector<std::pair<int64_t, int64_t>> steps, int64_t offset = 0, uint64_t lost = 0) {
  RankRecord r;
  for (const auto& [start, end] : steps) {
    r.steps.push_back(StepRange{"step", start, end});
    // Computation over the first half of each step, communication over the last quarter.
    const int64_t length = end - start;
    r.activities.push_back(Activity{start, start + length / 2, ActivityClass::Computation});
    r.activities.push_back(Activity{end - length / 4, end, ActivityClass::Communication});
  }
  r.clock_offset_ns = offset;
  r.records_lost = lost;
  return account(r);
}

TEST(overlap_steps, NestedRangesOfTheSameNameCountOnce) {
  // "step" [0,100) holds a "step" [10,20) (say, a sub-range named alike); [100,200) stands alone.
  const auto steps = outermost_ranges(
      {StepRange{"step", 100, 200}, StepRange{"step", 10, 20}, StepRange{"step", 0, 100}, StepRange{"x", 30, 10}});
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].start_ns, 0);
  EXPECT_EQ(steps[0].end_ns, 100);
  EXPECT_EQ(steps[1].start_ns, 100);
}

TEST(overlap_steps, RangesNestedTwoLevelsDeepCountOnce) {
  // step [0,100) > step [10,50) > step [20,30), then step [60,90) inside the first after the second ended, and
  // [40,45) inside the first two: all one step. Then step [100,200) > step [110,120) > step [115,118), and
  // [200,300) alone: three steps in all.
  const auto steps =
      outermost_ranges({StepRange{"step", 20, 30}, StepRange{"step", 60, 90}, StepRange{"step", 0, 100},
                        StepRange{"step", 10, 50}, StepRange{"step", 40, 45}, StepRange{"step", 115, 118},
                        StepRange{"step", 110, 120}, StepRange{"step", 100, 200}, StepRange{"step", 200, 300}});
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].start_ns, 0);
  EXPECT_EQ(steps[0].end_ns, 100);
  EXPECT_EQ(steps[1].start_ns, 100);
  EXPECT_EQ(steps[1].end_ns, 200);
  EXPECT_EQ(steps[2].start_ns, 200);
}

TEST(overlap_steps, EqualStartsKeepTheEnclosingRange) {
  const auto steps = outermost_ranges({StepRange{"inner", 0, 50}, StepRange{"outer", 0, 100}});
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].name, "outer");
}

TEST(overlap_job, TheSlowestRanksStepIsTheJobsStep) {
  // Rank 0's steps take 100 and 300, rank 1's 200 and 150: the job's steps are rank 1's first and
  // rank 0's second.
  const JobFigures job = job_figures({rank_with({{0, 100}, {100, 400}}), rank_with({{0, 200}, {200, 350}})});
  EXPECT_EQ(job.ranks, 2u);
  ASSERT_EQ(job.steps.size(), 2u);
  EXPECT_EQ(job.steps[0].slowest_rank, 1u);
  EXPECT_EQ(job.steps[0].slowest.step_ns, 200);
  EXPECT_EQ(job.steps[0].slowest.exposed_communication_ns, 50);
  EXPECT_EQ(job.steps[1].slowest_rank, 0u);
  EXPECT_EQ(job.steps[1].slowest.step_ns, 300);
  EXPECT_EQ(job.steps_left_out, 0u);
}

TEST(overlap_job, ATieGoesToTheLowerRank) {
  const JobFigures job = job_figures({rank_with({{0, 100}}), rank_with({{5, 105}})});
  ASSERT_EQ(job.steps.size(), 1u);
  EXPECT_EQ(job.steps[0].slowest_rank, 0u);
}

TEST(overlap_job, SpansUseEachRanksClockOffset) {
  // Rank 1's clock reads 1000 ns behind the job's: its step [0,100) is [1000,1100) on the job's
  // clock; rank 0's is [900,1050). The job's step spans [900,1100).
  const JobFigures job = job_figures({rank_with({{900, 1050}}), rank_with({{0, 100}}, 1000)});
  ASSERT_EQ(job.steps.size(), 1u);
  EXPECT_EQ(job.steps[0].span_start_ns, 900);
  EXPECT_EQ(job.steps[0].span_end_ns, 1100);
  EXPECT_EQ(job.steps[0].slowest_rank, 0u);  // 150 against 100: offsets move steps, never stretch them
}

TEST(overlap_job, OnlyStepsEveryRankHasAreCompared) {
  const JobFigures job = job_figures({rank_with({{0, 100}, {100, 200}, {200, 300}}), rank_with({{0, 100}})});
  EXPECT_EQ(job.steps.size(), 1u);
  EXPECT_EQ(job.steps_left_out, 2u);
}

TEST(overlap_job, LostRecordsAreSummedOverRanks) {
  const JobFigures job = job_figures({rank_with({{0, 100}}, 0, 3), rank_with({{0, 100}}, 0, 4)});
  EXPECT_EQ(job.records_lost, 7u);
}

TEST(overlap_job, NoRanksNoSteps) {
  const JobFigures job = job_figures({});
  EXPECT_EQ(job.ranks, 0u);
  EXPECT_TRUE(job.steps.empty());
}

TEST(overlap_median, OddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(median_of({}), 0.0);
  EXPECT_DOUBLE_EQ(median_of({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median_of({4, 1, 3, 2}), 2.5);
}

}  // namespace
}  // namespace tandem
