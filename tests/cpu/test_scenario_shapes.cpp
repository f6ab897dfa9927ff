// The training scenarios' shapes without a GPU: Llama layer dimensions, backward GEMMs, tensor-
// parallel sharding, DDP buckets, FSDP flat shards, the MoE expert split, and the option checks that
// run before any device is touched.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "error_of.h"
#include "harness/bench_options.h"
#include "harness/registry.h"
#include "harness/run_description.h"
#include "report/report.h"
#include "scenarios/model_shapes.h"
#include "tandem/error.h"

namespace {

using namespace tandem::bench::scenarios;
using tandem::bench::BenchOptions;

using tandem_test::error_of;

TEST(ScenarioShapes, Llama3Dimensions) {
  const ModelDims d8b = llama_dims(4096);
  EXPECT_EQ(d8b.ffn, 14336);
  EXPECT_EQ(d8b.heads, 32);
  EXPECT_EQ(d8b.kv_heads, 8);
  EXPECT_EQ(d8b.head_dim, 128);
  EXPECT_EQ(d8b.qkv_dim(), 6144);
  EXPECT_EQ(layer_params(d8b), 218103808);  // Llama 3 8B: 4096x6144 + 4096^2 + 4096x28672 + 14336x4096

  const ModelDims d70b = llama_dims(8192);
  EXPECT_EQ(d70b.ffn, 28672);
  EXPECT_EQ(d70b.heads, 64);
  EXPECT_EQ(d70b.kv_heads, 8);
  EXPECT_EQ(d70b.qkv_dim(), 10240);
  EXPECT_EQ(layer_params(d70b), 855638016);  // Llama 3 70B's 80 layers: 68.5 B of its 70.6 B

  const ModelDims small = llama_dims(256);
  EXPECT_EQ(small.heads, 2);
  EXPECT_EQ(small.kv_heads, 2);
  EXPECT_EQ(small.ffn, 896);
  const ModelDims custom = llama_dims(1000, 3000, 10, 5);
  EXPECT_EQ(custom.head_dim, 100);
  EXPECT_EQ(custom.qkv_dim(), 2000);
  EXPECT_NE(error_of([] { llama_dims(1000); }).find("give --heads"), std::string::npos);
  EXPECT_NE(error_of([] { llama_dims(4096, 0, 32, 6); }).find("--kv-heads 6"), std::string::npos);
}

TEST(ScenarioShapes, BackwardGemmsOfALayerInExecutionOrder) {
  const auto gemms = layer_backward_gemms(llama_dims(4096), 4096);
  ASSERT_EQ(gemms.size(), 8u);
  // name, m, n, k, trans_a, trans_b: dgrad dx = dy . W^T, wgrad dW = x^T . dy
  EXPECT_EQ(gemms[0], (GemmDims{"down.dgrad", 4096, 14336, 4096, false, true}));
  EXPECT_EQ(gemms[1], (GemmDims{"down.wgrad", 14336, 4096, 4096, true, false}));
  EXPECT_EQ(gemms[2], (GemmDims{"up_gate.dgrad", 4096, 4096, 28672, false, true}));
  EXPECT_EQ(gemms[3], (GemmDims{"up_gate.wgrad", 4096, 28672, 4096, true, false}));
  EXPECT_EQ(gemms[4], (GemmDims{"o.dgrad", 4096, 4096, 4096, false, true}));
  EXPECT_EQ(gemms[5], (GemmDims{"o.wgrad", 4096, 4096, 4096, true, false}));
  EXPECT_EQ(gemms[6], (GemmDims{"qkv.dgrad", 4096, 4096, 6144, false, true}));
  EXPECT_EQ(gemms[7], (GemmDims{"qkv.wgrad", 4096, 6144, 4096, true, false}));
  // Backward costs twice the forward: 2 GEMMs per weight, 2 flops per multiply-add.
  double flops = 0;
  for (const auto& g : gemms) flops += g.flops();
  EXPECT_DOUBLE_EQ(flops, 4.0 * 4096 * 218103808.0);
  EXPECT_EQ(forward_gemm(layer_linears(llama_dims(8192))[0], 4096),
            (GemmDims{"qkv.fwd", 4096, 10240, 8192, false, false}));
}

TEST(ScenarioShapes, TensorParallelShardsColumnThenRow) {
  const auto tp2 = layer_linears(llama_dims(4096), 2);
  ASSERT_EQ(tp2.size(), 4u);
  EXPECT_EQ(tp2[0].name, "qkv");
  EXPECT_EQ(tp2[0].in, 4096);
  EXPECT_EQ(tp2[0].out, 3072);  // 16 query heads + 4 key + 4 value heads of 128
  EXPECT_EQ(tp2[0].parallel, Parallel::Column);
  EXPECT_EQ(tp2[1].in, 2048);  // o: row-parallel over the local heads
  EXPECT_EQ(tp2[1].out, 4096);
  EXPECT_EQ(tp2[1].parallel, Parallel::Row);
  EXPECT_EQ(tp2[2].out, 14336);  // up_gate: 2 x 14336 / 2
  EXPECT_EQ(tp2[3].in, 7168);    // down
  EXPECT_EQ(layer_params(llama_dims(4096), 2) * 2, 218103808);

  const auto tp8 = layer_linears(llama_dims(8192), 8);
  EXPECT_EQ(tp8[0].out, 1280);
  EXPECT_EQ(tp8[1].in, 1024);
  EXPECT_EQ(tp8[2].out, 7168);
  EXPECT_EQ(tp8[3].in, 3584);
  EXPECT_NE(error_of([] { layer_linears(llama_dims(4096), 16); }).find("kv heads (8) divisible by 16"),
            std::string::npos);
  EXPECT_NE(error_of([] { layer_linears(llama_dims(4096), 3); }).find("divisible by 3"), std::string::npos);
}

TEST(ScenarioShapes, DdpBucketsCloseWhenFullFirstOneSmall) {
  // bf16; tensors in ready order: 200 kB, 600 kB, 800 kB | 10 MB, 10 MB, 4 MB, 40 MB | 2 kB.
  const std::vector<int64_t> elements = {100000, 300000, 400000, 5000000, 5000000, 2000000, 20000000, 1000};
  const auto plain = ddp_buckets(elements, 2, 1 << 20, 25 << 20);
  ASSERT_EQ(plain.size(), 3u);
  EXPECT_EQ(plain[0], (Bucket{0, 3, 0, 800000}));         // closes at 1.6 MB >= the 1 MiB first cap
  EXPECT_EQ(plain[1], (Bucket{3, 4, 800000, 32000000}));  // 24 MB < 25 MiB, + 40 MB closes it
  EXPECT_EQ(plain[2], (Bucket{7, 1, 32800000, 1000}));

  // Aligned tensors: same grouping, ranges include the padding between tensors.
  int64_t total = 0;
  const auto offsets = aligned_offsets(elements, 128, &total);
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 100096, 400128, 800128, 5800192, 10800256, 12800256, 32800256}));
  EXPECT_EQ(total, 32801256);
  const auto aligned = ddp_buckets(elements, 2, 1 << 20, 25 << 20, 128);
  ASSERT_EQ(aligned.size(), 3u);
  EXPECT_EQ(aligned[0], (Bucket{0, 3, 0, 800128}));
  EXPECT_EQ(aligned[1], (Bucket{3, 4, 800128, 32000128}));
  EXPECT_EQ(aligned[2], (Bucket{7, 1, 32800256, 1000}));

  // One big bucket cap: everything after the first bucket in one.
  const auto big = ddp_buckets(elements, 2, 1 << 20, 1 << 30);
  ASSERT_EQ(big.size(), 2u);
  EXPECT_EQ(big[1].count, 5);
}

TEST(ScenarioShapes, DdpBucketsOfLlamaModels) {
  // Hidden 4096: every gradient exceeds 25 MiB, so each is its own bucket, last layer first.
  const auto ready = ddp_ready_order_elements(llama_dims(4096), 4);
  ASSERT_EQ(ready.size(), 16u);
  EXPECT_EQ(ready[0], 58720256);   // L3 down
  EXPECT_EQ(ready[1], 117440512);  // L3 up_gate
  EXPECT_EQ(ready[2], 16777216);   // L3 o
  EXPECT_EQ(ready[3], 25165824);   // L3 qkv
  const auto buckets = ddp_buckets(ready, 2, 1 << 20, 25 << 20, 128);
  ASSERT_EQ(buckets.size(), 16u);
  for (const auto& b : buckets) EXPECT_EQ(b.count, 1);
  EXPECT_EQ(buckets[15].offset + buckets[15].elements, 4 * 218103808ll);

  // Hidden 1024, 2 layers: grouping happens. Bytes: down 7.3 MB, up_gate 14.7 MB, o 2.1 MB, qkv 6.3 MB.
  const auto small = ddp_buckets(ddp_ready_order_elements(llama_dims(1024), 2), 2, 1 << 20, 25 << 20);
  ASSERT_EQ(small.size(), 3u);
  EXPECT_EQ(small[0].count, 1);  // L1 down alone (first bucket, 1 MiB cap)
  EXPECT_EQ(small[1].count, 4);  // L1 up_gate, o, qkv (22 MB) + L0 down crosses 25 MiB
  EXPECT_EQ(small[2].count, 3);  // L0 up_gate, o, qkv
  EXPECT_EQ(small[2].first, 5);
}

TEST(ScenarioShapes, FsdpFlatParameterShards) {
  std::vector<int64_t> sizes;
  for (const auto& w : layer_linears(llama_dims(4096))) sizes.push_back(w.params());
  const FlatLayout two = flat_layout(sizes, 128, 2);
  EXPECT_EQ(two.offsets, (std::vector<int64_t>{0, 25165824, 41943040, 159383552}));
  EXPECT_EQ(two.used, 218103808);
  EXPECT_EQ(two.shard, 109051904);
  EXPECT_EQ(two.elements, 218103808);
  const FlatLayout three = flat_layout(sizes, 128, 3);
  EXPECT_EQ(three.shard, 72701312);  // ceil(218103808 / 3) rounded up to 128
  EXPECT_EQ(three.elements, 218103936);
}

TEST(ScenarioShapes, MoeExpertSplit) {
  const MoeSplit s = moe_split(8, 2, 4096, 4096, 2);
  EXPECT_EQ(s.experts_per_rank, 4);
  EXPECT_EQ(s.capacity, 1024);  // 4096 tokens x 2 choices / 8 experts, from each rank
  EXPECT_EQ(s.slots, 8192);
  EXPECT_EQ(s.expert_rows, 2048);  // from both ranks
  EXPECT_EQ(s.chunk, 16777216);    // 4 experts x 1024 slots x 4096 per peer
  const MoeSplit eight = moe_split(8, 2, 4096, 4096, 8);
  EXPECT_EQ(eight.experts_per_rank, 1);
  EXPECT_EQ(eight.expert_rows, 8192);
  EXPECT_NE(error_of([] { moe_split(8, 2, 4096, 4096, 3); }).find("divisible by the 3 rank(s)"), std::string::npos);
  EXPECT_NE(error_of([] { moe_split(8, 1, 100, 64, 2); }).find("balanced routing"), std::string::npos);
}

// The expert GEMMs of a rank's 4 experts as one batched launch: the shape of one, four times the work.
TEST(ScenarioShapes, BatchedExpertGemms) {
  const Linear up{"expert.up_gate", 4096, 2 * 768, Parallel::Column};
  const GemmDims one = forward_gemm(up, 2048);
  const GemmDims four = batched(one, 4);
  EXPECT_EQ(four.batch, 4);
  EXPECT_EQ(four.m, one.m);
  EXPECT_EQ(four.n, one.n);
  EXPECT_EQ(four.k, one.k);
  EXPECT_DOUBLE_EQ(four.flops(), 4 * one.flops());
  EXPECT_FALSE(four == one);
  EXPECT_NE(error_of([&] { batched(one, 0); }).find("batch 0 is not positive"), std::string::npos);
}

BenchOptions scenario_options(std::vector<std::string> names) {
  BenchOptions o;
  o.workloads = std::move(names);
  return o;
}

TEST(ScenarioOptions, NamesAreAcceptedButNotMixedWithMicrobenchmarks) {
  using tandem::bench::validate;
  EXPECT_NO_THROW(validate(scenario_options({"dp-backward", "tp-mlp", "tp-attention", "fsdp", "moe"})));
  EXPECT_NE(error_of([] { validate(scenario_options({"gemm", "fsdp"})); }).find("cannot be mixed"), std::string::npos);
  const std::string unknown = error_of([] { validate(scenario_options({"ddp"})); });
  EXPECT_NE(unknown.find("unknown workload 'ddp'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("dp-backward"), std::string::npos) << unknown;
  // One registry: three compute workloads, five scenarios.
  size_t scenarios = 0;
  for (const auto& e : tandem::bench::workload_registry()) scenarios += e.scenario != nullptr;
  EXPECT_EQ(scenarios, 5u);
  EXPECT_TRUE(tandem::bench::find_workload("moe").scenario);
  EXPECT_FALSE(tandem::bench::find_workload("gemm").scenario);
}

TEST(ScenarioOptions, RankDependentChecksRunWithoutAGpu) {
  const auto validate_scenarios = [](const BenchOptions& o, int nranks) {
    tandem::bench::validate_for_ranks(o, nranks);
  };
  BenchOptions o = scenario_options({"dp-backward", "tp-mlp", "tp-attention", "fsdp", "moe"});
  EXPECT_NO_THROW(validate_scenarios(o, 2));
  EXPECT_NO_THROW(validate_scenarios(o, 8));
  // 32 heads and 8 experts do not split over 3 ranks.
  EXPECT_NE(error_of([&] { validate_scenarios(scenario_options({"tp-attention"}), 3); }).find("divisible by 3"),
            std::string::npos);
  EXPECT_NE(error_of([&] { validate_scenarios(scenario_options({"moe"}), 3); }).find("--experts 8"), std::string::npos);
  BenchOptions sp = scenario_options({"tp-mlp"});
  sp.scenario.sequence_parallel = true;
  sp.scenario.seq = 4097;
  EXPECT_NE(error_of([&] { validate_scenarios(sp, 2); }).find("--sequence-parallel needs --seq"), std::string::npos);
  BenchOptions no_layers = scenario_options({"fsdp"});
  no_layers.scenario.layers = 0;
  EXPECT_NE(error_of([&] { validate_scenarios(no_layers, 2); }).find("--layers"), std::string::npos);
  // The header names every scenario with its resolved shapes.
  const auto lines = tandem::bench::scenario_config_lines(o, 2);
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  EXPECT_NE(all.find("dp-backward bf16 layers=4 hidden=4096 ffn=14336 heads=32/8 tokens=4096"), std::string::npos)
      << all;
  EXPECT_NE(all.find("16 DDP buckets"), std::string::npos) << all;
  EXPECT_NE(all.find("up_gate column-parallel [4096 x 14336], down row-parallel [7168 x 4096]"), std::string::npos)
      << all;
  EXPECT_NE(all.find("(4 per rank) top-2"), std::string::npos) << all;
  // --in-place shows in the header of the scenarios it changes.
  sp.scenario.seq = 4096;
  sp.in_place = true;
  const auto sp_lines = tandem::bench::scenario_config_lines(sp, 2);
  EXPECT_NE(sp_lines.back().find("sequence-parallel (all-gather + reduce-scatter, all-gathers in place)"),
            std::string::npos)
      << sp_lines.back();
}

TEST(ScenarioOptions, EveryRowGetsBoundFraction) {
  tandem::bench::Row bounded, unmeasured;
  bounded.t_overlap_ms = 4.0;
  bounded.t_bound_ms = 3.0;
  const nlohmann::json doc = tandem::bench::to_json(tandem::bench::RunInfo{}, {bounded, unmeasured}, {});
  EXPECT_DOUBLE_EQ(doc["rows"][0]["bound_fraction"].get<double>(), 0.75);
  EXPECT_TRUE(doc["rows"][1]["bound_fraction"].is_null());
}

}  // namespace
