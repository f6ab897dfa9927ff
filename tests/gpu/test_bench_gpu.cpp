// The bench harness on real GPUs: results exact (collectives) or within tolerance (GEMMs) under every
// policy, shaping reaching its target, failures that abort instead of hanging, and the command.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "gpu_test_util.h"
#include "harness/bench_ranks.h"
#include "harness/case_loop.h"
#include "harness/microbenchmark.h"
#include "harness/rank_context.h"
#include "harness/registry.h"
#include "ranks/rank_group.h"
#include "ranks/thread_communicators.h"
#include "tandem/cuda_check.h"
#include "tandem/dtype.h"
#include "tandem/nccl_check.h"

namespace {

using tandem::bench::BenchOptions;

BenchOptions small_options() {
  BenchOptions o;
  o.gpus = 0;
  o.workload.m = 1024;
  o.workload.n = 1024;
  o.workload.k = 512;
  o.workload.stream_bytes = 16 << 20;
  o.min_bytes = o.max_bytes = 8 << 20;
  o.iters = 3;
  o.warmup = 1;
  o.timeout_s = 60;
  o.progress = false;
  return o;
}

TEST(BenchGpu, EveryCollectiveAndPolicyGivesCorrectResults) {
  TANDEM_REQUIRE_GPUS(1);
  BenchOptions o = small_options();
  o.collectives = {"all-reduce", "all-gather", "reduce-scatter", "all-to-all"};
  const int ranks = tandem_test::gpu_count();
  const auto outcome = tandem::bench::run_bench(o, ranks, nullptr, nullptr);
  const size_t policies = tandem::bench::default_policies().size();
  size_t shaped_policies = 0;
  for (const auto& p : tandem::bench::default_policies())
    if (p.shape.kind != tandem::ShapeTarget::Kind::None) ++shaped_policies;
  // gemm (cuBLASLt) cannot be shaped: its shaping policies are skipped with a note; the others run.
  EXPECT_EQ(outcome.rows.size() + outcome.notes.size(), 3 * 4 * policies);
  std::set<std::string> workloads_seen;
  for (const auto& r : outcome.rows) {
    workloads_seen.insert(r.workload);
    EXPECT_EQ(r.wrong, 0) << r.workload << " " << r.collective << " " << r.policy;
    EXPECT_GT(r.t_overlap_ms, 0);
    EXPECT_GT(r.t_seq_ms, 0);
    EXPECT_GE(r.t_bound_ms, std::max(r.t_compute_ms, r.t_comm_ms));
    EXPECT_EQ(r.ranks, ranks);
    // One rank: NCCL copies with the copy engine and launches no kernel, so there is no footprint.
    if (ranks > 1) EXPECT_FALSE(r.comm_kernel.kernel.empty());
    if (r.workload == "tiled-gemm" && r.policy == "shape:2+priority") EXPECT_EQ(r.compute_blocks_per_sm, 2);
    if (r.workload == "gemm") EXPECT_EQ(r.compute_blocks_per_sm, -1);
  }
  EXPECT_EQ(workloads_seen.size(), 3u);
  size_t gemm_skips = 0;
  for (const auto& n : outcome.notes)
    if (n.find("skipped for gemm") != std::string::npos) ++gemm_skips;
  EXPECT_EQ(gemm_skips, 4 * shaped_policies);
}

// The device-memory bytes each workload reports for the bound (t_bound's HBM term), worked out by
// hand, bf16 (2 bytes): a GEMM reads A (m x k) and B (k x n) and writes C (m x n); the stream triad
// reads two arrays and writes one. A microbenchmark's program moves `count` units' bytes and the
// collective's (the collectives' own: test_bench_factors).
TEST(BenchGpu, BoundBytesPerWorkloadAndMicrobenchmark) {
  TANDEM_REQUIRE_GPUS(1);
  BenchOptions o = small_options();  // m = n = 1024, k = 512, 16 MiB stream arrays
  o.dtype = o.workload.dtype = tandem::DType::BF16;
  const int ranks = tandem_test::gpu_count();
  tandem::bench::run_on_local_ranks(o, ranks, [&](tandem::bench::RankContext& ctx) {
    const double gemm = (1024.0 * 512 + 512.0 * 1024 + 1024.0 * 1024) * 2;
    for (const char* name : {"gemm", "tiled-gemm"}) {
      auto workload = tandem::bench::find_workload(name).compute(o.workload);
      workload->setup(ctx);
      EXPECT_DOUBLE_EQ(workload->hbm_bytes(), gemm) << name;
    }
    auto stream = tandem::bench::find_workload("stream").compute(o.workload);
    stream->setup(ctx);
    EXPECT_DOUBLE_EQ(stream->hbm_bytes(), 3.0 * (16 << 20));

    const double bytes = 8 << 20;
    tandem::bench::Microbenchmark case_of_three("stream", *stream, tandem::Collective::AllReduce, uint64_t(bytes),
                                                o.dtype, 1, /*in_place=*/false);
    case_of_three.setup(ctx);
    ASSERT_TRUE(case_of_three.set_compute_count(3));
    EXPECT_EQ(case_of_three.program().ops().size(), 4u);
    EXPECT_DOUBLE_EQ(case_of_three.program().hbm_bytes(), 3 * 3.0 * (16 << 20) + 2 * bytes);
    EXPECT_EQ(case_of_three.program().collective_bytes(), uint64_t(bytes));
  });
}

// The controls beyond the paper's under every workload and collective: each is measured where it
// applies (sm-target: cuBLASLt GEMMs; every other control everywhere, copy-engine all-reduce and
// reduce-scatter through a copy-engine all-to-all and a sum), skipped with the reason elsewhere, and
// every result is exact or within the GEMM tolerance.
TEST(BenchGpu, EveryControlIsCorrectUnderEveryWorkloadAndCollective) {
  TANDEM_REQUIRE_GPUS(2);
  BenchOptions o = small_options();
  o.collectives = {"all-reduce", "all-gather", "reduce-scatter", "all-to-all"};
  o.policies = tandem::parse_policy_list(
      "sm-target:116,nccl-ctas:..8+nccl-cga:1,nccl-cta-policy:efficiency,green:96,comm-first+priority,copy-engine,"
      "nccl-symmetric,comm-first+priority+nccl-symmetric");
  const auto outcome = tandem::bench::run_bench(o, tandem_test::gpu_count(), nullptr, nullptr);
  EXPECT_EQ(outcome.rows.size() + outcome.notes.size(), 3u * 4 * o.policies.size());
  for (const auto& r : outcome.rows) EXPECT_EQ(r.wrong, 0) << r.workload << " " << r.collective << " " << r.policy;
  size_t sm_target_skips = 0;
  for (const auto& n : outcome.notes) {
    if (n.rfind("sm-target:116 skipped", 0) == 0)
      ++sm_target_skips;
    else
      ADD_FAILURE() << "unexpected skip: " << n;
  }
  EXPECT_EQ(sm_target_skips, 2u * 4);  // tiled-gemm and stream, every collective
}

TEST(BenchGpu, FpDtypesAreCheckedToo) {
  TANDEM_REQUIRE_GPUS(1);
  for (auto dtype : {tandem::DType::FP16, tandem::DType::FP32}) {
    BenchOptions o = small_options();
    o.dtype = dtype;
    o.policies = tandem::parse_policy_list("concurrent,shape:3+priority");
    o.workloads = {"tiled-gemm", "stream"};
    const auto outcome = tandem::bench::run_bench(o, tandem_test::gpu_count(), nullptr, nullptr);
    ASSERT_EQ(outcome.rows.size(), 4u);
    for (const auto& r : outcome.rows) EXPECT_EQ(r.wrong, 0) << r.workload << " " << r.dtype << " " << r.policy;
  }
}

// The copy-engine all-reduce and reduce-scatter sum on the SMs, 16 bytes a load where every chunk is
// 16-byte aligned and an element at a time where not: both paths, in every dtype, must be exact.
TEST(BenchGpu, CopyEngineReductionsAreExactWithAlignedAndUnalignedChunks) {
  TANDEM_REQUIRE_GPUS(2);
  const int ranks = tandem_test::gpu_count();
  for (auto dtype : {tandem::DType::BF16, tandem::DType::FP16, tandem::DType::FP32}) {
    const uint64_t elem = tandem::dtype_size(dtype);
    // One more element per rank's chunk than a 16-byte multiple holds.
    for (uint64_t bytes : {uint64_t(8) << 20, (uint64_t(8) << 20) + uint64_t(ranks) * elem}) {
      BenchOptions o = small_options();
      o.dtype = dtype;
      o.min_bytes = o.max_bytes = bytes;
      o.workloads = {"stream"};
      o.collectives = {"all-reduce", "reduce-scatter"};
      o.policies = tandem::parse_policy_list("copy-engine,comm-first+priority+copy-engine");
      const auto outcome = tandem::bench::run_bench(o, ranks, nullptr, nullptr);
      ASSERT_EQ(outcome.rows.size(), 4u) << bytes << " B";
      for (const auto& r : outcome.rows)
        EXPECT_EQ(r.wrong, 0) << r.collective << " " << r.dtype << " " << r.bytes << " B " << r.policy;
    }
  }
}

// --in-place: each collective's input shares the output's memory (NCCL's in-place forms), under
// NCCL's kernels and under the copy-engine routes (an all-gather's own chunk is then never copied).
// The check poisons the output, which in place is part of the input, so this also proves the input
// is restored before every checked run.
TEST(BenchGpu, InPlaceCollectivesAreExactUnderEveryRoute) {
  TANDEM_REQUIRE_GPUS(2);
  BenchOptions o = small_options();
  o.in_place = true;
  o.workloads = {"stream"};
  o.collectives = {"all-reduce", "all-gather", "reduce-scatter"};
  o.policies = tandem::parse_policy_list("concurrent,copy-engine,comm-first+priority+copy-engine,nccl-symmetric");
  const auto outcome = tandem::bench::run_bench(o, tandem_test::gpu_count(), nullptr, nullptr);
  ASSERT_EQ(outcome.rows.size(), 3u * 4);
  for (const auto& r : outcome.rows) {
    EXPECT_EQ(r.wrong, 0) << r.collective << " " << r.policy;
    EXPECT_GT(r.t_overlap_ms, 0);
  }
}

TEST(BenchGpu, ExplicitUnreachableShapingIsAnError) {
  TANDEM_REQUIRE_GPUS(1);
  BenchOptions o = small_options();
  o.workloads = {"gemm"};
  o.policies = tandem::parse_policy_list("shape:2");
  o.policies_given = true;
  try {
    tandem::bench::run_bench(o, 1, nullptr, nullptr);
    FAIL() << "expected an error";
  } catch (const tandem::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot apply"), std::string::npos) << e.what();
  }
}

TEST(BenchGpu, CollectiveThatNeverCompletesTimesOutAndAborts) {
  TANDEM_REQUIRE_GPUS(2);
  const std::vector<int> devices{0, 1};
  auto comms = tandem::bench::create_communicators(devices, 60);
  tandem::bench::RankGroup group(2);
  void* buffers[2] = {nullptr, nullptr};
  try {
    group.run([&](int rank) {
      tandem::bench::ThreadCoordinator peers(group, rank);
      tandem::bench::RankContext ctx(rank, 2, rank, peers, comms[rank], /*timeout_s=*/3);
      comms[rank] = nullptr;
      TANDEM_CUDA_CHECK(cudaMalloc(&buffers[rank], 1 << 20));
      if (rank == 0) {
        // Rank 1 never joins: without the watchdog this would wait forever.
        TANDEM_NCCL_CHECK(
            ctx.comm, ncclAllReduce(buffers[0], buffers[0], 1 << 18, ncclFloat32, ncclSum, ctx.comm, ctx.comm_default));
        ctx.await_communicator("lonely all-reduce");
        ctx.wait(ctx.comm_default, "lonely all-reduce");
      }
      group.barrier();  // rank 1 is released from here when rank 0 fails
    });
    FAIL() << "expected a timeout";
  } catch (const tandem::Error& e) {
    EXPECT_NE(std::string(e.what()).find("did not finish within 3 s"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("lonely all-reduce"), std::string::npos) << e.what();
  }
}

TEST(BenchCli, ShortRunWritesJsonAndOk) {
  TANDEM_REQUIRE_GPUS(1);
  const std::string json = ::testing::TempDir() + "/bench.json";
  const auto r = tandem_test::run_command(
      tandem_test::cli_path() +
      " bench --workload stream,tiled-gemm --gemm-shape 1024x1024x256 "
      "--stream-bytes 16M -b 8M -n 3 --warmup 1 -p concurrent,priority,shape:2+priority --json " +
      json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("# OK: 6 rows"), std::string::npos) << r.output;
  std::ifstream in(json);
  const auto doc = nlohmann::json::parse(in);
  for (const char* key :
       {"tandem_version", "commit", "command", "date", "gpu", "gpus", "driver", "cuda", "nccl", "rows"})
    EXPECT_TRUE(doc.contains(key)) << key;
  ASSERT_EQ(doc["rows"].size(), 6u);
  for (const auto& row : doc["rows"])
    for (const char* key :
         {"workload", "collective", "dtype", "bytes", "policy", "t_compute_ms", "t_comm_ms", "t_seq_ms", "t_overlap_ms",
          "t_bound_ms", "reduction", "efficiency", "compute_slowdown", "comm_slowdown", "busbw_gbps", "wrong"})
      EXPECT_TRUE(row.contains(key)) << key;
}

// `tandem tune` on a microbenchmark case writes its winner as a policy file that `tandem bench
// --policy @FILE` accepts. Tuning an out-of-place all-gather also notes that its own chunk is copied
// on SMs and names --in-place; tuned in place, it does not.
TEST(BenchCli, TuneWritesAPolicyFileBenchAcceptsAndNamesInPlace) {
  TANDEM_REQUIRE_GPUS(2);
  const std::string dir = ::testing::TempDir();
  const std::string shape = " --workload stream --stream-bytes 16M --collective all-gather -b 8M -n 2 --warmup 1";
  for (const std::string layout : {"", " --in-place"}) {
    const auto tune = tandem_test::run_command(tandem_test::cli_path() + " tune" + shape + layout + " --json " + dir +
                                               "/tune.json --out " + dir + "/tuned.policy");
    ASSERT_EQ(tune.exit_code, 0) << tune.output;
    std::ifstream in(dir + "/tune.json");
    const auto doc = nlohmann::json::parse(in);
    bool names_in_place = false;
    for (const auto& note : doc["notes"])
      names_in_place |= note.get<std::string>().find("tune with --in-place") != std::string::npos;
    EXPECT_EQ(names_in_place, layout.empty()) << layout << "\n" << tune.output;
    const auto bench = tandem_test::run_command(tandem_test::cli_path() + " bench" + shape + layout + " --policy @" +
                                                dir + "/tuned.policy");
    ASSERT_EQ(bench.exit_code, 0) << bench.output;
    EXPECT_NE(bench.output.find("# OK: 1 rows, 0 wrong"), std::string::npos) << bench.output;
  }
}

// --balance-size: one GEMM cannot be matched to a collective by counting GEMMs, so the collective is
// resized to the GEMM's time, the row reports the size measured, and the results are still exact.
TEST(BenchCli, BalanceSizeResizesTheCollectiveToTheCompute) {
  TANDEM_REQUIRE_GPUS(2);
  const std::string json = ::testing::TempDir() + "/balanced.json";
  const auto r = tandem_test::run_command(tandem_test::cli_path() +
                                          " bench --workload gemm --collective all-gather -b 256M --balance-size "
                                          "-n 10 --warmup 2 -p concurrent --json " +
                                          json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(json);
  const auto doc = nlohmann::json::parse(in);
  ASSERT_EQ(doc["rows"].size(), 1u);
  const auto& row = doc["rows"][0];
  EXPECT_EQ(row["count"], 1);
  EXPECT_NE(row["bytes"].get<uint64_t>(), uint64_t(256) << 20)
      << "a 256 MiB all-gather does not take one 8192^3 GEMM's time";
  EXPECT_EQ(row["bytes"].get<uint64_t>() % (uint64_t(1) << 20), 0u);
  const double ratio = row["t_comm_ms"].get<double>() / row["t_compute_ms"].get<double>();
  EXPECT_NEAR(ratio, 1.0, 0.2) << row.dump();
  EXPECT_EQ(row["wrong"], 0);
}

TEST(BenchCli, TooManyGpusIsAOneLineError) {
  TANDEM_REQUIRE_GPUS(1);
  const auto r = tandem_test::run_command(tandem_test::cli_path() + " bench --gpus 99");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("--gpus 99 but only"), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

TEST(BenchCli, IndivisibleSizeIsAOneLineError) {
  TANDEM_REQUIRE_GPUS(2);
  const auto r = tandem_test::run_command(
      tandem_test::cli_path() + " bench --workload stream --stream-bytes 16M --collective all-gather -b 1002 -q");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("not divisible by 2 rank(s)"), std::string::npos) << r.output;
}

}  // namespace
