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

// The main job on one GPU: no collective to overlap, so it measures what one GPU can show.
TEST(BenchOptions, OneRankMeasuresEachControlsComputeTax) {
  tb::BenchOptions o;
  const tb::BenchOptions one = tb::plan_for_ranks(o, 1);
  EXPECT_TRUE(one.one_gpu);
  EXPECT_FALSE(one.policies_given);  // a control that cannot apply to a workload is skipped with a note
  EXPECT_EQ(tb::effective_policies(one), tb::one_gpu_policies());
  EXPECT_EQ(one.workloads, o.workloads);
  bool shapes = false, caps = false;
  for (const auto& p : tb::effective_policies(one)) {
    // Every one changes the computation; one that only moves the collective would show nothing.
    EXPECT_TRUE(p.shape.kind != tandem::ShapeTarget::Kind::None || p.sm_target || p.green_sms || p.comm_priority)
        << tandem::to_string(p);
    EXPECT_FALSE(p.is_sequential() || p.order == tandem::LaunchOrder::CommFirst || p.copy_engine)
        << tandem::to_string(p);
    // shape:auto needs the collective's CTA, which one rank never launches.
    EXPECT_NE(p.shape.kind, tandem::ShapeTarget::Kind::Auto) << tandem::to_string(p);
    shapes |= p.shape.kind == tandem::ShapeTarget::Kind::BlocksPerSm;
    caps |= p.sm_target.has_value();
  }
  EXPECT_TRUE(shapes && caps);  // the paper's control and tandem's
  // Policies the user named are kept, and measured the same way.
  o.policies = tandem::parse_policy_list("priority,shape:2+priority");
  o.policies_given = true;
  const tb::BenchOptions named = tb::plan_for_ranks(o, 1);
  EXPECT_TRUE(named.one_gpu);
  EXPECT_EQ(named.policies, o.policies);
  // Two ranks or more: the overlap run, unchanged.
  for (int ranks : {2, 8}) {
    const tb::BenchOptions many = tb::plan_for_ranks(tb::BenchOptions{}, ranks);
    EXPECT_FALSE(many.one_gpu);
    EXPECT_EQ(tb::effective_policies(many), tb::default_policies());
  }
}

TEST(BenchOptions, OneGpuHeaderSaysWhatOneGpuCanAndCannotShow) {
  std::string text;
  for (const auto& line : tb::one_gpu_lines()) text += line + "\n";
  for (const char* what : {"no collective to overlap", "compute tax", "residency plan", "two or more GPUs",
                           "--allow-shared-gpu", "checks correctness only", "tandem run"})
    EXPECT_NE(text.find(what), std::string::npos) << what;
}
