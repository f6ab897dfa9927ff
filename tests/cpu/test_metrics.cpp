#include <gtest/gtest.h>

#include <cmath>

#include "harness/metrics.h"
#include "tandem/error.h"

namespace tb = tandem::bench;

TEST(Metrics, SummaryIsMedianMinMax) {
  const auto s = tb::summarize({5, 1, 3, 4, 2});
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.spread(), 4.0 / 3);
  EXPECT_DOUBLE_EQ(tb::summarize({4, 1, 3, 2}).median, 2.5);
  EXPECT_THROW(tb::summarize({}), tandem::Error);
}

TEST(Metrics, SlowestRankPerStep) {
  EXPECT_EQ(tb::max_over_ranks({{1, 5, 2}, {3, 1, 2.5}}), (std::vector<double>{3, 5, 2.5}));
  EXPECT_THROW(tb::max_over_ranks({{1, 2}, {1}}), tandem::Error);
}

TEST(Metrics, BoundIsTheSlowestSideOrMemory) {
  EXPECT_DOUBLE_EQ(tb::bound_ms(2.0, 1.5, 0, 4000), 2.0);
  EXPECT_DOUBLE_EQ(tb::bound_ms(1.0, 1.5, 0, 4000), 1.5);
  // 8 GB at 4000 GB/s is 2 ms: memory, not either side alone, bounds the step.
  EXPECT_DOUBLE_EQ(tb::bound_ms(1.0, 1.5, 8e9, 4000), 2.0);
}

TEST(Metrics, ReductionAndEfficiencyFollowTheDesignDefinitions) {
  EXPECT_DOUBLE_EQ(tb::reduction(3.0, 4.0), 0.25);
  EXPECT_DOUBLE_EQ(tb::efficiency(4.0, 2.0, 2.0), 1.0);    // collective fully hidden
  EXPECT_DOUBLE_EQ(tb::efficiency(4.0, 4.0, 2.0), 0.0);    // no gain
  EXPECT_DOUBLE_EQ(tb::efficiency(4.0, 5.0, 2.0), -0.5);   // worse than sequential
  EXPECT_TRUE(std::isnan(tb::efficiency(2.0, 2.0, 2.0)));  // nothing to gain
  // t_seq == t_bound with an overlap that differs from both: still nothing to gain, not +-inf.
  EXPECT_TRUE(std::isnan(tb::efficiency(2.0, 1.5, 2.0)));
  EXPECT_TRUE(std::isnan(tb::efficiency(2.0, 2.5, 2.0)));
  EXPECT_TRUE(std::isnan(tb::efficiency(2.0, 1.5, 3.0)));  // bound above t_seq
}

TEST(Metrics, ADenominatorMustStandOutOfItsSpread) {
  EXPECT_TRUE(tb::denominator_defined(1.0, 0.1));
  EXPECT_TRUE(tb::denominator_defined(0.3, 0));
  EXPECT_FALSE(tb::denominator_defined(0.1, 0.1));  // equal to the noise: within it
  EXPECT_FALSE(tb::denominator_defined(0.05, 0.1));
  EXPECT_FALSE(tb::denominator_defined(0, 0));
  EXPECT_FALSE(tb::denominator_defined(-1.0, 0.1));
  EXPECT_FALSE(tb::denominator_defined(std::nan(""), 0.1));
  EXPECT_FALSE(tb::denominator_defined(1.0, std::nan("")));
}

TEST(Metrics, BandwidthAndBalance) {
  EXPECT_DOUBLE_EQ(tb::algbw_gbps(1e9, 1.0), 1000);
  EXPECT_EQ(tb::balanced_count(0.4, 1.9), 5);
  EXPECT_EQ(tb::balanced_count(3.0, 1.0), 1);  // never zero units
  EXPECT_THROW(tb::balanced_count(0, 1), tandem::Error);
}

TEST(Metrics, BalancedBytesScalesTheCollectiveToTheComputeTime) {
  const uint64_t mib = 1 << 20;
  // Within 5 %: unchanged.
  EXPECT_EQ(tb::balanced_bytes(512 * mib, 1.45, 1.40, 2), 512 * mib);
  // 1.45 ms of GEMM against 1.28 ms of all-gather: 512 MiB x 1.45 / 1.28 = 580 MiB, in 1 MiB steps.
  EXPECT_EQ(tb::balanced_bytes(512 * mib, 1.45, 1.28, 2), 580 * mib);
  // Shrinks too: 1.45 / 1.85 of 512 MiB = 401.3 -> 401 MiB.
  EXPECT_EQ(tb::balanced_bytes(512 * mib, 1.45, 1.85, 2), 401 * mib);
  // Eight ranks: 16 MiB steps, so every peer's chunk stays whole.
  EXPECT_EQ(tb::balanced_bytes(512 * mib, 1.45, 1.28, 8) % (16 * mib), 0u);
  // Exactly at the tolerance: unchanged (1.25 / 1 is 25 % off, exactly representable); just past
  // it, 4 MiB x 1.25 = 5 MiB.
  EXPECT_EQ(tb::balanced_bytes(4 * mib, 1.25, 1.0, 2, 0.25), 4 * mib);
  EXPECT_EQ(tb::balanced_bytes(4 * mib, 1.25, 1.0, 2, 0.24), 5 * mib);
  // Never below one step.
  EXPECT_EQ(tb::balanced_bytes(mib, 0.001, 10.0, 2), mib);
  EXPECT_THROW(tb::balanced_bytes(mib, 0, 1.0, 2), tandem::Error);
}

TEST(Metrics, OperationTimesScaleEachSideToItsBaseline) {
  // Compute ops 0 and 2 timed at 1 + 3 ms against a 4.4 ms baseline (x1.1); the collective at 2 ms
  // against 1 ms (x0.5).
  const auto t = tb::operation_times({1, 0, 3}, {0, 2, 0}, 4.4, 1.0);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_DOUBLE_EQ(t[0], 1.1);
  EXPECT_DOUBLE_EQ(t[1], 1.0);
  EXPECT_DOUBLE_EQ(t[2], 3.3);
  // A side with nothing to time stays at zero instead of dividing by zero.
  EXPECT_EQ(tb::operation_times({1, 2}, {0, 0}, 6, 5), (std::vector<double>{2, 4}));
  EXPECT_THROW(tb::operation_times({1, 2}, {0}, 3, 1), tandem::Error);
  EXPECT_THROW(tb::operation_times({1, 2}, {0, 1}, 3, 1), tandem::Error);  // one operation on both sides
  EXPECT_THROW(tb::operation_times({-1, 0}, {0, 1}, 3, 1), tandem::Error);
}
