// The Coordinator operations the runners aggregate with (all-gather of series, sum, min, broadcast),
// on the threads implementation; the process implementation carries the same bytes over NCCL.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "harness/slowest_rank.h"
#include "ranks/coordinator.h"
#include "ranks/rank_group.h"
#include "tandem/error.h"

namespace tandem::bench {
namespace {

TEST(Coordinator, SeriesSumMinAndBroadcast) {
  const int n = 3;
  RankGroup group(n);
  std::vector<std::vector<std::vector<std::vector<double>>>> seen(n);
  std::vector<int64_t> sums(n);
  std::vector<double> mins(n);
  std::vector<int> broadcast(n);
  group.run([&](int rank) {
    ThreadCoordinator c(group, rank);
    EXPECT_EQ(c.size(), n);
    EXPECT_EQ(c.rank(), rank);
    // Series of different lengths per rank, one of them empty.
    std::vector<double> a(rank + 1, 1.5 * rank), b;
    seen[rank] = c.all_gather_series({a, b, {double(rank)}});
    sums[rank] = c.sum(int64_t(1) << (40 + rank));  // beyond what a double-based sum would keep exact
    mins[rank] = c.min(10.0 - rank);
    int value = rank == 0 ? 42 : -1;
    c.broadcast_from_rank0(&value, sizeof(value));
    broadcast[rank] = value;
  });
  for (int rank = 0; rank < n; ++rank) {
    ASSERT_EQ(seen[rank].size(), size_t(n));
    for (int from = 0; from < n; ++from) {
      ASSERT_EQ(seen[rank][from].size(), 3u);
      EXPECT_EQ(seen[rank][from][0], std::vector<double>(from + 1, 1.5 * from));
      EXPECT_TRUE(seen[rank][from][1].empty());
      EXPECT_EQ(seen[rank][from][2], std::vector<double>{double(from)});
    }
    EXPECT_EQ(sums[rank], (int64_t(1) << 40) + (int64_t(1) << 41) + (int64_t(1) << 42));
    EXPECT_EQ(mins[rank], 8.0);
    EXPECT_EQ(broadcast[rank], 42);
  }
}

TEST(Coordinator, StepTimesReduceToTheSlowestRankThenTheMedian) {
  RankGroup group(2);
  std::vector<std::vector<Summary>> got(2);
  group.run([&](int rank) {
    ThreadCoordinator c(group, rank);
    // Per step, rank 1 is slower on steps 0 and 2, rank 0 on step 1.
    const std::vector<double> total = rank == 0 ? std::vector<double>{1, 5, 2} : std::vector<double>{3, 1, 4};
    got[rank] = slowest_rank_summaries(c, {total, {}});
  });
  for (const auto& summaries : got) {
    ASSERT_EQ(summaries.size(), 2u);
    EXPECT_DOUBLE_EQ(summaries[0].median, 4);  // slowest per step: 3, 5, 4
    EXPECT_DOUBLE_EQ(summaries[0].min, 3);
    EXPECT_DOUBLE_EQ(summaries[0].max, 5);
    EXPECT_DOUBLE_EQ(summaries[1].median, 0);  // an empty series stays empty
  }
}

TEST(Coordinator, FailureReleasesTheOthers) {
  RankGroup group(2);
  std::atomic<int> released{0};
  EXPECT_THROW(group.run([&](int rank) {
    ThreadCoordinator c(group, rank);
    if (rank == 0) throw std::runtime_error("rank 0 broke");
    try {
      c.all_gather(std::string("x"));
    } catch (const Error&) {
      ++released;
      throw;
    }
  }),
               std::runtime_error);
  EXPECT_EQ(released.load(), 1);
  ThreadCoordinator c(group, 1);
  EXPECT_TRUE(c.failed());
  EXPECT_THROW(c.throw_if_failed(), Error);
}

}  // namespace
}  // namespace tandem::bench
