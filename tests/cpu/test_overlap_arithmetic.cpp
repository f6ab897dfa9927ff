// tandem::account (tandem/overlap.h) on hand-made activity records: unions per class over streams,
// their intersection, steps that clip intervals, empty steps, the whole run as one step, clock
// offsets and lost records. Every expected figure is worked out by hand in the comment above it.
#include <gtest/gtest.h>

#include "tandem/overlap.h"

namespace tandem {
namespace {

constexpr ActivityClass kComp = ActivityClass::Computation;
constexpr ActivityClass kComm = ActivityClass::Communication;

Activity act(int64_t start, int64_t end, ActivityClass cls) { return Activity{start, end, cls}; }

RankRecord record(std::vector<Activity> activities, std::vector<StepRange> steps = {}) {
  RankRecord r;
  r.activities = std::move(activities);
  r.steps = std::move(steps);
  return r;
}

const StepFigures& only_step(const RankFigures& f) {
  EXPECT_EQ(f.steps.size(), 1u);
  return f.steps.at(0);
}

TEST(overlap_account, SerialComputationThenCommunicationHidesNothing) {
  // comp [0,100), comm [100,150): nothing overlaps; the run is [0,150).
  const RankFigures f = account(record({act(0, 100, kComp), act(100, 150, kComm)}));
  const StepFigures& s = only_step(f);
  EXPECT_EQ(s.name, "run");
  EXPECT_EQ(s.start_ns, 0);
  EXPECT_EQ(s.end_ns, 150);
  EXPECT_EQ(s.step_ns, 150);
  EXPECT_EQ(s.computation_ns, 100);
  EXPECT_EQ(s.communication_ns, 50);
  EXPECT_EQ(s.overlapped_ns, 0);
  EXPECT_EQ(s.exposed_communication_ns, 50);
  EXPECT_EQ(s.idle_ns, 0);
  ASSERT_TRUE(s.hidden_share());
  EXPECT_DOUBLE_EQ(*s.hidden_share(), 0.0);
  EXPECT_EQ(s.activities, 2u);
}

TEST(overlap_account, CommunicationUnderComputationIsHidden) {
  // comp [0,100), comm [20,60): all 40 of communication overlapped.
  const StepFigures s = only_step(account(record({act(0, 100, kComp), act(20, 60, kComm)})));
  EXPECT_EQ(s.computation_ns, 100);
  EXPECT_EQ(s.communication_ns, 40);
  EXPECT_EQ(s.overlapped_ns, 40);
  EXPECT_EQ(s.exposed_communication_ns, 0);
  EXPECT_EQ(s.idle_ns, 0);
  EXPECT_DOUBLE_EQ(*s.hidden_share(), 1.0);
}

TEST(overlap_account, PartialOverlap) {
  // comp [0,100), comm [80,180): overlapped [80,100) = 20, exposed 80, hidden 20 %.
  const StepFigures s = only_step(account(record({act(0, 100, kComp), act(80, 180, kComm)})));
  EXPECT_EQ(s.step_ns, 180);
  EXPECT_EQ(s.overlapped_ns, 20);
  EXPECT_EQ(s.exposed_communication_ns, 80);
  EXPECT_DOUBLE_EQ(*s.hidden_share(), 0.2);
}

TEST(overlap_account, OneClassOnSeveralStreamsCountsOnce) {
  // Two computation kernels on two streams, [0,60) and [40,100): busy 100, not 120. Communication on
  // two streams, [50,70) and [65,90), and a third nested in the second, [70,80): busy [50,90) = 40.
  // Overlap with computation [0,100): all 40.
  const StepFigures s = only_step(account(
      record({act(0, 60, kComp), act(40, 100, kComp), act(50, 70, kComm), act(65, 90, kComm), act(70, 80, kComm)})));
  EXPECT_EQ(s.computation_ns, 100);
  EXPECT_EQ(s.communication_ns, 40);
  EXPECT_EQ(s.overlapped_ns, 40);
  EXPECT_EQ(s.activities, 5u);
}

TEST(overlap_account, IdleIsWhatNeitherClassCovers) {
  // comp [0,10) and [50,60), comm [20,30): union 30 over a run of 60: idle 30.
  const StepFigures s = only_step(account(record({act(0, 10, kComp), act(50, 60, kComp), act(20, 30, kComm)})));
  EXPECT_EQ(s.step_ns, 60);
  EXPECT_EQ(s.idle_ns, 30);
  EXPECT_EQ(s.exposed_communication_ns, 10);
}

TEST(overlap_account, IntervalsAreClippedToTheirStep) {
  // Steps [0,100) and [100,200); a computation kernel [50,150) crosses the boundary and counts 50 in
  // each; communication [90,120) counts 10 in the first (all overlapped) and 20 in the second
  // (overlapped [100,120) = 20 as computation runs to 150).
  const RankFigures f = account(
      record({act(50, 150, kComp), act(90, 120, kComm)}, {StepRange{"step", 0, 100}, StepRange{"step", 100, 200}}));
  ASSERT_EQ(f.steps.size(), 2u);
  const StepFigures& a = f.steps[0];
  const StepFigures& b = f.steps[1];
  EXPECT_EQ(a.computation_ns, 50);
  EXPECT_EQ(a.communication_ns, 10);
  EXPECT_EQ(a.overlapped_ns, 10);
  EXPECT_EQ(a.idle_ns, 50);
  EXPECT_EQ(a.activities, 2u);
  EXPECT_EQ(b.computation_ns, 50);
  EXPECT_EQ(b.communication_ns, 20);
  EXPECT_EQ(b.overlapped_ns, 20);
  EXPECT_EQ(b.idle_ns, 50);
  EXPECT_EQ(b.activities, 2u);
  // The totals add the parts: the kernel's 100 once, split over the two steps.
  const StepFigures t = f.total();
  EXPECT_EQ(t.name, "total");
  EXPECT_EQ(t.computation_ns, 100);
  EXPECT_EQ(t.communication_ns, 30);
  EXPECT_EQ(t.step_ns, 200);
  EXPECT_EQ(t.start_ns, 0);
  EXPECT_EQ(t.end_ns, 200);
}

TEST(overlap_account, AnEmptyStepIsAllIdle) {
  // Nothing runs in [100,200): every figure 0 but idle, and no hidden share without communication.
  const RankFigures f = account(
      record({act(0, 50, kComp), act(10, 20, kComm)}, {StepRange{"step", 0, 100}, StepRange{"step", 100, 200}}));
  ASSERT_EQ(f.steps.size(), 2u);
  const StepFigures& empty = f.steps[1];
  EXPECT_EQ(empty.step_ns, 100);
  EXPECT_EQ(empty.idle_ns, 100);
  EXPECT_EQ(empty.computation_ns, 0);
  EXPECT_EQ(empty.communication_ns, 0);
  EXPECT_EQ(empty.activities, 0u);
  EXPECT_FALSE(empty.hidden_share());
}

TEST(overlap_account, ActivitiesOutsideEveryStepAreCountedApart) {
  // Step [100,200); [0,50) and [250,300) reach into no step; [150,260) does.
  const RankFigures f =
      account(record({act(0, 50, kComp), act(250, 300, kComm), act(150, 260, kComp)}, {StepRange{"step", 100, 200}}));
  EXPECT_EQ(f.activities, 3u);
  EXPECT_EQ(f.outside_steps, 2u);
  EXPECT_EQ(only_step(f).activities, 1u);
  EXPECT_EQ(only_step(f).computation_ns, 50);
}

TEST(overlap_account, StepsComeOutInTheOrderOfTheirStarts) {
  const RankFigures f = account(
      record({act(0, 300, kComp)}, {StepRange{"b", 200, 300}, StepRange{"a", 0, 100}, StepRange{"c", 100, 200}}));
  ASSERT_EQ(f.steps.size(), 3u);
  EXPECT_EQ(f.steps[0].name, "a");
  EXPECT_EQ(f.steps[1].name, "c");
  EXPECT_EQ(f.steps[2].name, "b");
}

TEST(overlap_account, ZeroLengthAndReversedIntervalsCountForNothing) {
  const RankFigures f = account(record({act(10, 10, kComp), act(30, 20, kComm), act(0, 5, kComm)}));
  EXPECT_EQ(f.activities, 1u);
  const StepFigures& s = only_step(f);
  EXPECT_EQ(s.step_ns, 5);
  EXPECT_EQ(s.communication_ns, 5);
  EXPECT_EQ(s.computation_ns, 0);
}

TEST(overlap_account, NoActivityAndNoStepsGiveNoSteps) {
  const RankFigures f = account(RankRecord{});
  EXPECT_TRUE(f.steps.empty());
  EXPECT_EQ(f.total().step_ns, 0);
}

TEST(overlap_account, ClockOffsetShiftsTimesNotFigures) {
  RankRecord r = record({act(0, 100, kComp), act(80, 180, kComm)}, {StepRange{"step", 0, 200}});
  r.clock_offset_ns = 1000;
  const StepFigures s = only_step(account(r));
  EXPECT_EQ(s.start_ns, 1000);
  EXPECT_EQ(s.end_ns, 1200);
  EXPECT_EQ(s.overlapped_ns, 20);
  EXPECT_EQ(s.exposed_communication_ns, 80);
  EXPECT_EQ(s.idle_ns, 20);
}

TEST(overlap_account, LostRecordsAreReported) {
  RankRecord r = record({act(0, 10, kComp)});
  r.records_lost = 7;
  EXPECT_EQ(account(r).records_lost, 7u);
}

TEST(overlap_account, OverlappingStepsAreEachCountedWhole) {
  // Two steps that overlap each other, [0,100) and [50,150): each sees the kernels inside it.
  const RankFigures f =
      account(record({act(0, 150, kComp), act(60, 90, kComm)}, {StepRange{"a", 0, 100}, StepRange{"b", 50, 150}}));
  ASSERT_EQ(f.steps.size(), 2u);
  EXPECT_EQ(f.steps[0].communication_ns, 30);
  EXPECT_EQ(f.steps[1].communication_ns, 30);
  EXPECT_EQ(f.outside_steps, 0u);
}

TEST(overlap_account, ManyIntervalsMatchABruteForceCount) {
  // A deterministic pseudo-random mix over [0,10000) with steps of 1000: each figure against a
  // nanosecond-by-nanosecond count.
  std::vector<Activity> acts;
  uint64_t seed = 12345;
  const auto next = [&](uint64_t bound) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((seed >> 33) % bound);
  };
  for (int i = 0; i < 300; ++i) {
    const int64_t start = next(10000);
    acts.push_back(act(start, start + 1 + next(300), next(3) == 0 ? kComm : kComp));
  }
  std::vector<StepRange> steps;
  for (int k = 0; k < 10; ++k) steps.push_back(StepRange{"step", k * 1000, (k + 1) * 1000});
  const RankFigures f = account(record(acts, steps));
  ASSERT_EQ(f.steps.size(), 10u);
  for (int k = 0; k < 10; ++k) {
    int64_t comp = 0, comm = 0, both = 0, idle = 0;
    for (int64_t t = k * 1000; t < (k + 1) * 1000; ++t) {
      bool in_comp = false, in_comm = false;
      for (const Activity& a : acts) {
        if (a.start_ns <= t && t < a.end_ns) (a.cls == kComm ? in_comm : in_comp) = true;
      }
      comp += in_comp;
      comm += in_comm;
      both += in_comp && in_comm;
      idle += !in_comp && !in_comm;
    }
    const StepFigures& s = f.steps[static_cast<size_t>(k)];
    EXPECT_EQ(s.computation_ns, comp) << "step " << k;
    EXPECT_EQ(s.communication_ns, comm) << "step " << k;
    EXPECT_EQ(s.overlapped_ns, both) << "step " << k;
    EXPECT_EQ(s.exposed_communication_ns, comm - both) << "step " << k;
    EXPECT_EQ(s.idle_ns, idle) << "step " << k;
  }
}

}  // namespace
}  // namespace tandem
