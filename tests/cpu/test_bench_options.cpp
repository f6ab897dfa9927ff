#include <gtest/gtest.h>

#include "error_of.h"
#include "harness/bench_options.h"
#include "harness/registry.h"
#include "tandem/error.h"

namespace tb = tandem::bench;

using tandem_test::error_of;

TEST(BenchOptions, DefaultsAreThePaperSuite) {
  tb::BenchOptions o;
  EXPECT_EQ(o.workloads, (std::vector<std::string>{"gemm", "tiled-gemm", "stream"}));
  EXPECT_EQ(o.collectives, (std::vector<std::string>{"all-reduce"}));
  const auto& p = tb::effective_policies(o);
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(tandem::to_string(p.front()), "sequential");
  EXPECT_NO_THROW(tb::validate(o));
}

TEST(BenchOptions, SizesParseWithBinaryUnits) {
  EXPECT_EQ(tb::parse_size("4096"), 4096u);
  EXPECT_EQ(tb::parse_size("64K"), 64u << 10);
  EXPECT_EQ(tb::parse_size("256M"), 256u << 20);
  EXPECT_EQ(tb::parse_size("1GiB"), 1ull << 30);
  EXPECT_NE(error_of([] { tb::parse_size("12x"); }).find("bad size '12x'"), std::string::npos);
  EXPECT_NE(error_of([] { tb::parse_size("12x", "--minbytes"); }).find("bad --minbytes '12x'"), std::string::npos);
  EXPECT_NE(error_of([] { tb::parse_size(""); }).find("bad size"), std::string::npos);
}

TEST(BenchOptions, SweepFollowsNcclTests) {
  EXPECT_EQ(tb::size_sweep(1 << 20, 8 << 20, 2), (std::vector<uint64_t>{1 << 20, 2 << 20, 4 << 20, 8 << 20}));
  EXPECT_EQ(tb::size_sweep(1 << 20, 1 << 20, 2), (std::vector<uint64_t>{1 << 20}));
}

TEST(BenchOptions, BadNamesAreRejectedWithTheAcceptedList) {
  tb::BenchOptions o;
  o.workloads = {"gemm", "matmul"};
  EXPECT_NE(error_of([&] { tb::validate(o); }).find("unknown workload 'matmul'; accepted: gemm, tiled-gemm, stream"),
            std::string::npos);
  o = {};
  o.collectives = {"allreduce"};
  EXPECT_NE(error_of([&] { tb::validate(o); }).find("unknown collective 'allreduce'; accepted: all-reduce"),
            std::string::npos);
  EXPECT_NE(error_of([] { tandem::parse_dtype("int8"); }).find("unknown dtype 'int8'; accepted: bf16, fp16, fp32"),
            std::string::npos);
}

TEST(BenchOptions, RangesAreChecked) {
  tb::BenchOptions o;
  o.iters = 0;
  EXPECT_NE(error_of([&] { tb::validate(o); }).find("--iters"), std::string::npos);
  o = {};
  o.max_bytes = o.min_bytes / 2;
  EXPECT_NE(error_of([&] { tb::validate(o); }).find("--maxbytes"), std::string::npos);
  o = {};
  o.timeout_s = 0;
  EXPECT_NE(error_of([&] { tb::validate(o); }).find("--timeout"), std::string::npos);
}

TEST(BenchOptions, BalanceSizeNeedsBalancingAndMicrobenchmarks) {
  tb::BenchOptions o;
  o.balance_size = true;
  EXPECT_NO_THROW(tb::validate(o));
  o.balance = false;
  EXPECT_NE(error_of([&] { tb::validate(o); }).find("--balance-size"), std::string::npos);
  o = {};
  o.balance_size = true;
  o.workloads = {"dp-backward"};
  EXPECT_NE(error_of([&] { tb::validate(o); }).find("applies to microbenchmarks"), std::string::npos);
}

TEST(BenchOptions, SizesMustSplitAcrossRanks) {
  tb::BenchOptions o;
  o.collectives = {"all-gather"};
  o.min_bytes = o.max_bytes = 1002;
  EXPECT_NE(error_of([&] {
              tb::validate_for_ranks(o, 2);
            }).find("all-gather: size 1002 B is not divisible by 2 rank(s) x 2 B (bf16)"),
            std::string::npos);
  o.collectives = {"all-reduce"};
  EXPECT_NO_THROW(tb::validate_for_ranks(o, 2));  // all-reduce is not split
  o.min_bytes = o.max_bytes = 1001;
  EXPECT_NE(error_of([&] { tb::validate_for_ranks(o, 2); }).find("not divisible"), std::string::npos);
}

TEST(BenchOptions, TraceIsForMicrobenchmarksAndScenarios) {
  tb::BenchOptions o;
  o.trace_path = "trace.json";
  o.workloads = {"gemm"};
  EXPECT_NO_THROW(tb::validate(o));
  o.workloads = {"tp-attention", "dp-backward"};
  EXPECT_NO_THROW(tb::validate(o));
}

TEST(BenchOptions, InPlaceIsForCollectivesThatHaveTheForm) {
  tb::BenchOptions o;
  o.in_place = true;
  o.collectives = {"all-reduce", "all-gather", "reduce-scatter"};
  EXPECT_NO_THROW(tb::validate(o));
  o.collectives.push_back("all-to-all");
  EXPECT_NE(error_of([&] { tb::validate(o); }).find("all-to-all has no in-place form"), std::string::npos);
  // Scenarios: only the tensor-parallel ones with sequence parallelism produce their gathers' inputs.
  o.collectives = {"all-reduce"};
  o.workloads = {"tp-attention"};
  EXPECT_NE(error_of([&] { tb::validate(o); }).find("only tp-mlp and tp-attention with --sequence-parallel"),
            std::string::npos);
  o.scenario.sequence_parallel = true;
  EXPECT_NO_THROW(tb::validate(o));
  o.workloads = {"fsdp"};
  EXPECT_NE(error_of([&] { tb::validate(o); }).find("(got 'fsdp')"), std::string::npos);
}
