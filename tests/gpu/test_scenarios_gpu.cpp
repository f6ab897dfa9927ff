// The training scenarios on real GPUs, at a small size: every output matches the lockstep reference
// under every default policy on all visible GPUs, the check is not vacuous, and the command prints
// and writes the same rows as the microbenchmarks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "gpu_test_util.h"
#include "harness/bench_ranks.h"
#include "harness/case_loop.h"
#include "harness/program.h"
#include "harness/scenario.h"
#include "scenarios/model_shapes.h"
#include "tandem/cuda_check.h"

namespace {

using tandem::bench::BenchOptions;

// Hidden 1024 (8 heads of 128, 8 kv heads, ffn 3584) splits over up to 8 ranks; 256 tokens keep the
// naive reference GEMMs fast. Small DDP buckets make several gradients share one.
BenchOptions small_options(const std::string& scenario) {
  BenchOptions o;
  o.workloads = {scenario};
  o.scenario.hidden = 1024;
  o.scenario.seq = 256;
  o.scenario.layers = 2;
  o.scenario.micro_batches = 2;
  o.scenario.bucket_mb = 8;
  o.iters = 3;
  o.warmup = 1;
  o.timeout_s = 120;
  o.progress = false;
  return o;
}

// The small configuration of `scenario` under exactly `policies`, on every visible GPU.
tandem::bench::BenchOutcome run_small(const std::string& scenario, const std::string& policies) {
  BenchOptions o = small_options(scenario);
  o.policies = tandem::parse_policy_list(policies);
  o.policies_given = true;
  return tandem::bench::run_bench(o, tandem_test::gpu_count(), nullptr, nullptr);
}

void expect_all_policies_correct(const BenchOptions& o, const std::string& label) {
  const int ranks = tandem_test::gpu_count();
  const auto outcome = tandem::bench::run_bench(o, ranks, nullptr, nullptr);
  const auto& policies = tandem::bench::effective_policies(o);
  // Every policy is either measured or skipped with a note. Only shape:auto may be skipped: on one
  // rank NCCL launches no kernel to leave room for, and on H200 NCCL 2.28's real CTA (544 threads x
  // 96 registers, ~101 KB) does not fit beside any padding of these kernels.
  EXPECT_EQ(outcome.rows.size() + outcome.notes.size(), policies.size()) << label;
  for (const auto& note : outcome.notes) {
    EXPECT_NE(note.find("shape:auto"), std::string::npos) << label << ": " << note;
    EXPECT_TRUE(ranks == 1 || note.find("cannot leave room") != std::string::npos) << label << ": " << note;
  }
  for (const auto& r : outcome.rows) {
    EXPECT_EQ(r.wrong, 0) << label << " " << r.policy;
    EXPECT_EQ(r.workload, o.workloads.front());
    EXPECT_EQ(r.ranks, ranks);
    EXPECT_GT(r.bytes, 0u);
    EXPECT_GT(r.t_overlap_ms, 0) << label << " " << r.policy;
    EXPECT_GT(r.t_seq_ms, 0);
    EXPECT_GT(r.t_compute_ms, 0);
    // The chain holds both sides, at most end to end; the bound holds the chain.
    EXPECT_GE(r.t_chain_ms, std::max(r.t_compute_ms, r.t_comm_ms) * (1 - 1e-9)) << label;
    EXPECT_LE(r.t_chain_ms, (r.t_compute_ms + r.t_comm_ms) * (1 + 1e-9)) << label;
    EXPECT_GE(r.t_bound_ms, r.t_chain_ms);
    EXPECT_FALSE(r.compute_kernel.kernel.empty());
    // One rank: NCCL copies or does nothing, so there is no collective kernel or time to speak of.
    if (ranks > 1) {
      EXPECT_FALSE(r.comm_kernel.kernel.empty()) << label;
      EXPECT_GT(r.t_comm_ms, 0) << label;
      if (r.policy != "sequential") EXPECT_GT(r.comm_slowdown, 0) << label << " " << r.policy;
    }
    if (r.policy == "shape:2+priority") EXPECT_EQ(r.compute_blocks_per_sm, 2) << label;
    // Unshaped, the first element-wise kernel's own residency (a GEMM's would be -1).
    if (r.policy == "priority") EXPECT_GT(r.compute_blocks_per_sm, 0);
    if (r.policy == "sequential") continue;
    if (ranks > 1) {
      EXPECT_GT(r.compute_slowdown, 0) << label << " " << r.policy;
    } else {
      // One rank has nothing to overlap: the slowdown is left undefined, with its reason, never a number.
      EXPECT_TRUE(std::isnan(r.compute_slowdown)) << label << " " << r.policy << ": " << r.compute_slowdown;
      EXPECT_TRUE(std::any_of(r.undefined.begin(), r.undefined.end(),
                              [](const auto& u) { return u.figure == "compute_slowdown"; }))
          << label << " " << r.policy;
    }
  }
}

TEST(ScenariosGpu, DataParallelBackwardIsCorrectUnderEveryPolicy) {
  TANDEM_REQUIRE_GPUS(1);
  expect_all_policies_correct(small_options("dp-backward"), "dp-backward");
}

TEST(ScenariosGpu, TheLastBucketsReductionIsOnTheChain) {
  // Nothing follows the last gradient bucket's all-reduce: no overlap can hide it, so the chain is
  // longer than the compute alone by at least some of it.
  TANDEM_REQUIRE_GPUS(2);
  const auto outcome = run_small("dp-backward", "priority");
  ASSERT_EQ(outcome.rows.size(), 1u);
  const auto& r = outcome.rows.front();
  EXPECT_GT(r.t_chain_ms, std::max(r.t_compute_ms, r.t_comm_ms) + 0.01)
      << "compute " << r.t_compute_ms << " ms, collectives " << r.t_comm_ms << " ms";
}

TEST(ScenariosGpu, TensorParallelMlpIsCorrectUnderEveryPolicy) {
  TANDEM_REQUIRE_GPUS(1);
  expect_all_policies_correct(small_options("tp-mlp"), "tp-mlp");
  BenchOptions sp = small_options("tp-mlp");
  sp.scenario.sequence_parallel = true;
  expect_all_policies_correct(sp, "tp-mlp --sequence-parallel");
}

TEST(ScenariosGpu, TensorParallelAttentionIsCorrectUnderEveryPolicy) {
  TANDEM_REQUIRE_GPUS(1);
  expect_all_policies_correct(small_options("tp-attention"), "tp-attention");
  BenchOptions sp = small_options("tp-attention");
  sp.scenario.sequence_parallel = true;
  expect_all_policies_correct(sp, "tp-attention --sequence-parallel");
}

TEST(ScenariosGpu, FsdpIsCorrectUnderEveryPolicy) {
  TANDEM_REQUIRE_GPUS(1);
  expect_all_policies_correct(small_options("fsdp"), "fsdp");
}

TEST(ScenariosGpu, MoeIsCorrectUnderEveryPolicy) {
  TANDEM_REQUIRE_GPUS(1);
  BenchOptions o = small_options("moe");
  o.scenario.expert_ffn = 1024;
  expect_all_policies_correct(o, "moe");
}

// The controls beyond the paper's, named explicitly (so each must apply or the run fails): copy
// engines on symmetric windows (fsdp: out-of-place all-gathers and reduce-scatters through the
// exchange on every lane; moe: all-to-alls through it; tp-mlp: both), SM-count targets, NCCL's CTA
// cap and cluster size, and green contexts.
TEST(ScenariosGpu, EveryControlIsCorrectWhereItApplies) {
  TANDEM_REQUIRE_GPUS(2);
  const char* controls =
      "copy-engine,comm-first+priority+copy-engine,sm-target:116+priority,nccl-ctas:..8+nccl-cga:1,green:96,"
      "nccl-symmetric";
  for (const char* name : {"fsdp", "moe", "tp-mlp"}) {
    BenchOptions o = small_options(name);
    o.scenario.expert_ffn = 1024;
    o.scenario.sequence_parallel = std::string(name) == "tp-mlp";
    o.policies = tandem::parse_policy_list(controls);
    o.policies_given = true;
    const auto outcome = tandem::bench::run_bench(o, tandem_test::gpu_count(), nullptr, nullptr);
    ASSERT_EQ(outcome.rows.size(), o.policies.size()) << name;
    for (const auto& r : outcome.rows) {
      EXPECT_EQ(r.wrong, 0) << name << " " << r.policy;
      EXPECT_GT(r.t_overlap_ms, 0) << name << " " << r.policy;
    }
  }
}

// --in-place: tp-*'s all-gather inputs are written into their chunk of the gathered buffer (x[l] by
// the forward's residual add, dy by the backward's), under NCCL's kernels and its copy-engine
// all-gather. The aliasing must keep every output equal to the out-of-place reference's.
TEST(ScenariosGpu, InPlaceGathersAreCorrectUnderKernelsAndCopyEngines) {
  TANDEM_REQUIRE_GPUS(2);
  for (const char* name : {"tp-mlp", "tp-attention"}) {
    BenchOptions o = small_options(name);
    o.scenario.sequence_parallel = true;
    o.in_place = true;
    o.policies = tandem::parse_policy_list(
        "sequential,concurrent,priority,copy-engine,comm-first+priority+copy-engine,nccl-symmetric");
    o.policies_given = true;
    const auto outcome = tandem::bench::run_bench(o, tandem_test::gpu_count(), nullptr, nullptr);
    ASSERT_EQ(outcome.rows.size(), o.policies.size()) << name;
    for (const auto& r : outcome.rows) EXPECT_EQ(r.wrong, 0) << name << " " << r.policy;
  }
}

// dp-backward only all-reduces: under copy-engine each bucket goes through the copy-engine exchange,
// a sum and NCCL's in-place copy-engine all-gather, at an offset inside the gradient buffer
// registered on every lane; under
// nccl-symmetric through NCCL's symmetric kernels. Both must give the reference's gradients.
TEST(ScenariosGpu, AllReduceScenarioTakesCopyEnginesAndSymmetricWindows) {
  TANDEM_REQUIRE_GPUS(2);
  const auto outcome = run_small("dp-backward", "copy-engine,comm-first+priority+copy-engine,nccl-symmetric");
  ASSERT_EQ(outcome.rows.size(), 3u);
  for (const auto& r : outcome.rows) EXPECT_EQ(r.wrong, 0) << r.policy;
}

TEST(ScenariosGpu, OtherDtypesAndMoreMicroBatchesAreCheckedToo) {
  TANDEM_REQUIRE_GPUS(1);
  for (auto dtype : {tandem::DType::FP16, tandem::DType::FP32}) {
    for (const char* name : {"tp-mlp", "moe"}) {
      BenchOptions o = small_options(name);
      o.dtype = dtype;
      o.scenario.micro_batches = 3;
      o.policies = tandem::parse_policy_list("sequential,concurrent,comm-first+priority");
      const auto outcome = tandem::bench::run_bench(o, tandem_test::gpu_count(), nullptr, nullptr);
      ASSERT_EQ(outcome.rows.size(), 3u);
      for (const auto& r : outcome.rows) EXPECT_EQ(r.wrong, 0) << name << " " << r.dtype << " " << r.policy;
    }
  }
}

TEST(ScenariosGpu, BytesAreTheCollectivesOfOneIteration) {
  TANDEM_REQUIRE_GPUS(1);
  const int ranks = tandem_test::gpu_count();
  BenchOptions o = small_options("dp-backward");
  o.policies = tandem::parse_policy_list("priority");
  const auto outcome = tandem::bench::run_bench(o, ranks, nullptr, nullptr);
  ASSERT_EQ(outcome.rows.size(), 1u);
  // Every gradient of both layers all-reduced once, bf16 (the tensors are multiples of 128 elements,
  // so buckets hold no padding).
  const auto dims = tandem::bench::scenarios::llama_dims(1024);
  EXPECT_EQ(outcome.rows[0].bytes, uint64_t(2 * tandem::bench::scenarios::layer_params(dims) * 2));
  EXPECT_EQ(outcome.rows[0].collective, "all-reduce");
  EXPECT_EQ(outcome.rows[0].count, 2);
}

// The check must be able to fail: outputs nothing wrote are counted wrong, and a run restores them.
TEST(ScenariosGpu, CheckCountsOutputsNothingWrote) {
  TANDEM_REQUIRE_GPUS(1);
  for (const char* name : {"dp-backward", "tp-mlp", "tp-attention", "fsdp", "moe"}) {
    BenchOptions o = small_options(name);
    tandem::bench::run_on_local_ranks(o, 1, [&](tandem::bench::RankContext& ctx) {
      auto scenario = tandem::bench::make_scenario(name, o, 1);
      scenario->setup(ctx);
      tandem::bench::Executor executor(scenario->program());
      tandem::bench::StepStreams streams;
      streams.compute = ctx.compute;
      streams.comm = ctx.comm_high;
      scenario->poison_outputs(ctx.compute);
      EXPECT_GT(scenario->count_wrong(ctx), 0) << name;
      executor.enqueue(ctx, streams, tandem::bench::Schedule::Overlap);
      ctx.wait(ctx.compute, "scenario");
      EXPECT_EQ(scenario->count_wrong(ctx), 0) << name;
    });
  }
}

// --trace: one more iteration per policy and rank, every operation once, each stream's operations in
// program order one after the other, and every operation starting after the one it waited for.
TEST(ScenariosGpu, TracesShowEveryOperationAfterWhatItWaitedFor) {
  TANDEM_REQUIRE_GPUS(1);
  const int ranks = tandem_test::gpu_count();
  // Events on different streams share one clock, read to about half a microsecond.
  constexpr double kClockMs = 0.002;
  for (const std::string name : {"tp-attention", "dp-backward"}) {
    BenchOptions o = small_options(name);
    o.scenario.sequence_parallel = name == "tp-attention";  // collectives both wait and are waited for
    o.policies = tandem::parse_policy_list("sequential,comm-first+priority,concurrent");
    o.policies_given = true;
    o.trace_path = "unused";  // turns tracing on; the command line writes the file
    const auto outcome = tandem::bench::run_bench(o, ranks, nullptr, nullptr);
    ASSERT_EQ(outcome.traces.size(), size_t(3 * ranks)) << name;
    for (const auto& it : outcome.traces) {
      const std::string where = name + " " + it.policy + " rank " + std::to_string(it.rank);
      EXPECT_EQ(it.workload, name);
      EXPECT_EQ(it.sequential, it.policy == "sequential") << where;
      ASSERT_EQ(it.spans.size(), outcome.traces.front().spans.size()) << where;
      double stream_free[2] = {0, 0};
      int collectives = 0, waits = 0;
      for (const auto& s : it.spans) {
        EXPECT_GE(s.start_ms, 0) << where << " " << s.name;
        EXPECT_GE(s.end_ms, s.start_ms) << where << " " << s.name;
        const int stream = s.collective && !it.sequential ? 1 : 0;
        EXPECT_GE(s.start_ms, stream_free[stream]) << where << " " << s.name;
        stream_free[stream] = s.end_ms;
        collectives += s.collective ? 1 : 0;
        if (s.waits_for < 0) continue;
        ++waits;
        ASSERT_FALSE(it.sequential) << where;
        const auto& before = it.spans[s.waits_for];
        EXPECT_NE(before.collective, s.collective) << where << " " << s.name;
        EXPECT_GE(s.start_ms + kClockMs, before.end_ms) << where << ": " << s.name << " waits for " << before.name;
      }
      EXPECT_GT(collectives, 0) << where;
      if (!it.sequential) EXPECT_GT(waits, 0) << where;
    }
  }
}

TEST(ScenariosCli, TraceFileOpensAsChromeTrace) {
  TANDEM_REQUIRE_GPUS(1);
  const std::string path = ::testing::TempDir() + "/scenario-trace.json";
  const auto r = tandem_test::run_command(tandem_test::cli_path() +
                                          " bench --workload tp-mlp --hidden 1024 --seq 256 --layers 2 -n 2 "
                                          "--warmup 1 -p comm-first+priority -q --trace " +
                                          path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(path);
  const auto doc = nlohmann::json::parse(in);
  int spans = 0, all_reduces = 0;
  std::set<std::string> processes;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] != "X") continue;
    ++spans;
    EXPECT_GE(e["dur"].get<double>(), 0);
    if (e["name"].get<std::string>().find("all-reduce") != std::string::npos) {
      ++all_reduces;
      EXPECT_EQ(e["cat"], "collective");
    }
  }
  EXPECT_EQ(processes, (std::set<std::string>{"tp-mlp comm-first+priority"}));
  // The run's identity, as in the JSON results.
  EXPECT_FALSE(doc["otherData"]["commit"].get<std::string>().empty());
  EXPECT_NE(doc["otherData"]["command"].get<std::string>().find("--trace"), std::string::npos);
  // Two layers, forward and backward, two micro-batches: 8 all-reduces per rank.
  EXPECT_EQ(all_reduces, 8 * tandem_test::gpu_count());
  EXPECT_GT(spans, all_reduces);
}

TEST(ScenariosCli, ShortRunWritesRowsAndBoundFraction) {
  TANDEM_REQUIRE_GPUS(1);
  const std::string json = ::testing::TempDir() + "/scenarios.json";
  const auto r = tandem_test::run_command(tandem_test::cli_path() +
                                          " bench --workload tp-mlp,fsdp --hidden 1024 --seq 256 --layers 2 -n 3 "
                                          "--warmup 1 -p sequential,comm-first+priority --json " +
                                          json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("# OK: 4 rows"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("# scenario  tp-mlp bf16 layers=2 hidden=1024"), std::string::npos) << r.output;
  std::ifstream in(json);
  const auto doc = nlohmann::json::parse(in);
  ASSERT_EQ(doc["rows"].size(), 4u);
  std::set<std::string> collectives;
  for (const auto& row : doc["rows"]) {
    for (const char* key : {"workload", "collective", "bytes", "policy", "t_compute_ms", "t_comm_ms", "t_seq_ms",
                            "t_overlap_ms", "t_bound_ms", "efficiency", "bound_fraction", "wrong"})
      EXPECT_TRUE(row.contains(key)) << key;
    EXPECT_EQ(row["wrong"], 0);
    EXPECT_GT(row["bound_fraction"].get<double>(), 0);
    collectives.insert(row["collective"].get<std::string>());
  }
  EXPECT_EQ(collectives, (std::set<std::string>{"all-reduce", "all-gather+reduce-scatter"}));
}

// `tandem tune` searches a scenario's policies like a microbenchmark's, and the policy file it writes
// is accepted by `tandem bench` for that scenario.
TEST(ScenariosCli, TuneWritesAPolicyFileBenchAccepts) {
  TANDEM_REQUIRE_GPUS(1);
  const std::string dir = ::testing::TempDir();
  const std::string shape = " --workload fsdp --hidden 1024 --seq 256 --layers 2 -n 2 --warmup 1";
  const auto tune = tandem_test::run_command(tandem_test::cli_path() + " tune" + shape + " --json " + dir +
                                             "/scenario-tune.json --out " + dir + "/scenario.policy");
  ASSERT_EQ(tune.exit_code, 0) << tune.output;
  EXPECT_NE(tune.output.find("# summary"), std::string::npos) << tune.output;
  std::ifstream in(dir + "/scenario-tune.json");
  const auto doc = nlohmann::json::parse(in);
  int tuned = 0;
  std::set<std::string> policies;
  std::multiset<std::string> roles;
  for (const auto& row : doc["rows"]) {
    EXPECT_EQ(row["workload"], "fsdp");
    EXPECT_EQ(row["wrong"], 0) << row["policy"];
    EXPECT_GT(row["bound_fraction"].get<double>(), 0);
    tuned += row["tuned"].get<bool>() ? 1 : 0;
    policies.insert(row["policy"].get<std::string>());
    if (!row["tune_role"].get<std::string>().empty()) roles.insert(row["tune_role"].get<std::string>());
    if (row["tuned"].get<bool>()) EXPECT_EQ(row["tune_role"], "tuned");
  }
  EXPECT_EQ(tuned, 1);
  // The final round: naive, the paper's policy and the winner, measured together.
  EXPECT_EQ(roles, (std::multiset<std::string>{"naive", "paper", "tuned"}));
  // The search went past launch order and priority.
  EXPECT_GT(policies.size(), 10u);
  const auto bench =
      tandem_test::run_command(tandem_test::cli_path() + " bench" + shape + " --policy @" + dir + "/scenario.policy");
  EXPECT_EQ(bench.exit_code, 0) << bench.output;
  EXPECT_NE(bench.output.find("# OK: 1 rows"), std::string::npos) << bench.output;
}

TEST(ScenariosCli, MixingScenariosAndMicrobenchmarksIsAOneLineError) {
  TANDEM_REQUIRE_GPUS(1);
  const auto r = tandem_test::run_command(tandem_test::cli_path() + " bench --workload gemm,dp-backward");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("cannot be mixed"), std::string::npos) << r.output;
}

}  // namespace
