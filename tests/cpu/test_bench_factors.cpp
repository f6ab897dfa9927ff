// The constants behind the bandwidth and bound columns, per collective, scenario and rank count:
// nccl-tests' busbw factors (all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n),
// how many pieces a collective's buffer splits into, and the device-memory bytes the CPU can see
// without allocating (the stream workload's), all written out by hand below.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "harness/registry.h"
#include "harness/scenario.h"
#include "tandem/copy_engine.h"

namespace tandem::bench {
namespace {

// factor[ranks] by hand: all-reduce 2(n-1)/n = 1, 1.5, 1.75; the others (n-1)/n = 0.5, 0.75, 0.875.
const std::map<int, double> kAllReduce = {{1, 0.0}, {2, 1.0}, {4, 1.5}, {8, 1.75}};
const std::map<int, double> kOthers = {{1, 0.0}, {2, 0.5}, {4, 0.75}, {8, 0.875}};

TEST(BusbwFactors, EveryCollectivePerRankCount) {
  const std::map<std::string, const std::map<int, double>*> expected = {
      {"all-reduce", &kAllReduce}, {"all-gather", &kOthers}, {"reduce-scatter", &kOthers}, {"all-to-all", &kOthers}};
  ASSERT_EQ(collective_registry().size(), expected.size());
  for (const auto& [name, factors] : expected) {
    const auto collective = find_collective(name).make();
    for (const auto& [ranks, factor] : *factors)
      EXPECT_DOUBLE_EQ(collective->busbw_factor(ranks), factor) << name << " on " << ranks << " ranks";
  }
}

TEST(BusbwFactors, ShardsPerCollective) {
  // The all-reduce buffer is reduced whole; the others are split into one piece per rank.
  EXPECT_EQ(find_collective("all-reduce").make()->shards(8), 1);
  for (const char* name : {"all-gather", "reduce-scatter", "all-to-all"}) {
    EXPECT_EQ(find_collective(name).make()->shards(2), 2) << name;
    EXPECT_EQ(find_collective(name).make()->shards(8), 8) << name;
  }
}

TEST(BusbwFactors, EveryScenarioPerRankCount) {
  // Data parallel and tensor parallel without sequence parallelism all-reduce; FSDP gathers and
  // reduce-scatters; MoE exchanges all-to-all.
  const std::map<std::string, const std::map<int, double>*> expected = {{"dp-backward", &kAllReduce},
                                                                        {"tp-mlp", &kAllReduce},
                                                                        {"tp-attention", &kAllReduce},
                                                                        {"fsdp", &kOthers},
                                                                        {"moe", &kOthers}};
  ASSERT_EQ(scenario_registry().size(), expected.size());
  for (const auto& entry : scenario_registry()) {
    ScenarioConfig config;
    config.nranks = 2;
    const auto scenario = entry.make(config);
    const auto it = expected.find(entry.name);
    ASSERT_NE(it, expected.end()) << entry.name;
    for (const auto& [ranks, factor] : *it->second)
      if (ranks > 1)
        EXPECT_DOUBLE_EQ(scenario->busbw_factor(ranks), factor) << entry.name << " on " << ranks << " ranks";
  }
}

TEST(BoundBytes, StreamTriadReadsTwoArraysAndWritesOne) {
  // a = b + s * c over --stream-bytes per array: 3 x the bytes of one array, per unit.
  WorkloadOptions options;
  options.stream_bytes = 64 << 20;
  EXPECT_DOUBLE_EQ(find_workload("stream").make(options)->hbm_bytes(), 3.0 * (64 << 20));
  // The default array is 256 MiB.
  EXPECT_DOUBLE_EQ(find_workload("stream").make(WorkloadOptions{})->hbm_bytes(), 3.0 * (256 << 20));
}

// The copy-engine all-reduce splits its elements into one equal chunk per rank (the exchange's
// reduce-scatter, then the all-gather): 1024 elements split on 2, 4 and 8 ranks, 1000 on 8 but not
// on 16 (62.5), 1001 on none but 7, 11 and 13.
TEST(CopyEngineChunking, AllReduceNeedsEqualChunks) {
  const auto copy_engine_all_reduce_refusal = [](uint64_t count, int ranks) {
    return copy_engine_refusal(tandem::Collective::AllReduce, count, ranks, ncclBfloat16);
  };
  for (int ranks : {1, 2, 4, 8}) EXPECT_EQ(copy_engine_all_reduce_refusal(1024, ranks), "") << ranks;
  EXPECT_EQ(copy_engine_all_reduce_refusal(1000, 8), "");
  EXPECT_EQ(copy_engine_all_reduce_refusal(1000, 16),
            "a copy-engine all-reduce splits its 1000 elements into 16 equal chunks");
  EXPECT_EQ(copy_engine_all_reduce_refusal(1001, 7), "");
  EXPECT_NE(copy_engine_all_reduce_refusal(1001, 2), "");
  EXPECT_NE(copy_engine_all_reduce_refusal(1001, 8), "");
}

}  // namespace
}  // namespace tandem::bench
