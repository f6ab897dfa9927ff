// tandem::gpu_windows (tandem/overlap.h): a program's steps, marked on the host, placed on the GPU's
// time by the order in which their work was issued. The host runs ahead of the GPU, so the host
// ranges below deliberately end long before the work they issued runs.
#include <gtest/gtest.h>

#include "tandem/overlap.h"

namespace tandem {
namespace {

Activity issued(int64_t start, int64_t end, uint32_t issue) {
  return Activity{start, end, ActivityClass::Computation, issue};
}

TEST(overlap_windows, EachStepRunsFromItsFirstWorkToTheNextSteps) {
  // Host: three steps in [0,30) (issue marks 1-10, 10-20, 20-30); GPU: their work at 1000 and later.
  const std::vector<HostStep> steps = {{"s", 0, 10, 1, 10}, {"s", 10, 20, 10, 20}, {"s", 20, 30, 20, 30}};
  const std::vector<Activity> work = {issued(1000, 1400, 2), issued(1300, 1500, 3), issued(1600, 2000, 11),
                                      issued(2100, 2300, 21), issued(2200, 2600, 22)};
  const auto w = gpu_windows(steps, work);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].start_ns, 1000);
  EXPECT_EQ(w[0].end_ns, 1600);  // the next step's first work
  EXPECT_EQ(w[1].start_ns, 1600);
  EXPECT_EQ(w[1].end_ns, 2100);
  EXPECT_EQ(w[2].start_ns, 2100);
  EXPECT_EQ(w[2].end_ns, 2600);  // the last step: its last work's end
}

TEST(overlap_windows, WorkIssuedOutsideEveryStepPlacesNoBoundary) {
  // Issue 15 falls between the steps (the program's timer, say): it sets no window's edge.
  const std::vector<HostStep> steps = {{"s", 0, 10, 1, 10}, {"s", 20, 30, 20, 30}};
  const auto w = gpu_windows(steps, {issued(100, 200, 5), issued(150, 500, 15), issued(300, 400, 25)});
  EXPECT_EQ(w[0].start_ns, 100);
  EXPECT_EQ(w[0].end_ns, 300);
  EXPECT_EQ(w[1].start_ns, 300);
  EXPECT_EQ(w[1].end_ns, 400);
}

TEST(overlap_windows, AStepThatIssuedNothingIsEmptyWhereTheNextBegins) {
  const std::vector<HostStep> steps = {{"s", 0, 10, 1, 10}, {"s", 10, 20, 10, 20}, {"s", 20, 30, 20, 30}};
  const auto w = gpu_windows(steps, {issued(100, 200, 5), issued(300, 400, 25)});
  EXPECT_EQ(w[0].end_ns, 300);
  EXPECT_EQ(w[1].start_ns, 300);
  EXPECT_EQ(w[1].end_ns, 300);
}

TEST(overlap_windows, ALaterStepThatStartedFirstLeavesAnEmptyWindowNeverAReversedOne) {
  // Step 1's work started (another stream) before step 0's.
  const std::vector<HostStep> steps = {{"s", 0, 10, 1, 10}, {"s", 10, 20, 10, 20}};
  const auto w = gpu_windows(steps, {issued(500, 600, 5), issued(400, 700, 15)});
  EXPECT_EQ(w[0].start_ns, 500);
  EXPECT_EQ(w[0].end_ns, 500);
  EXPECT_EQ(w[1].start_ns, 400);
}

TEST(overlap_windows, StepsWithoutMarksKeepTheirHostRanges) {
  const std::vector<HostStep> steps = {{"s", 0, 100, 0, 0}, {"s", 100, 200, 7, 7}};
  const auto w = gpu_windows(steps, {issued(10, 20, 3)});
  EXPECT_EQ(w[0].start_ns, 0);
  EXPECT_EQ(w[0].end_ns, 100);
  EXPECT_EQ(w[1].start_ns, 100);
  EXPECT_EQ(w[1].end_ns, 200);
}

TEST(overlap_windows, TheWindowsThenGiveTheFigures) {
  // Step 0 issued computation [1000,1400) and communication [1300,1700); step 1 computation
  // [1800,2000): step 0's window [1000,1800) holds 100 overlapped, 300 exposed, 100 idle.
  const std::vector<HostStep> steps = {{"s", 0, 10, 1, 10}, {"s", 10, 20, 10, 20}};
  RankRecord r;
  r.activities = {issued(1000, 1400, 2), Activity{1300, 1700, ActivityClass::Communication, 3}, issued(1800, 2000, 11)};
  r.steps = gpu_windows(steps, r.activities);
  const RankFigures f = account(r);
  ASSERT_EQ(f.steps.size(), 2u);
  EXPECT_EQ(f.steps[0].step_ns, 800);
  EXPECT_EQ(f.steps[0].overlapped_ns, 100);
  EXPECT_EQ(f.steps[0].exposed_communication_ns, 300);
  EXPECT_EQ(f.steps[0].idle_ns, 100);
  EXPECT_EQ(f.steps[1].step_ns, 200);
}

}  // namespace
}  // namespace tandem
