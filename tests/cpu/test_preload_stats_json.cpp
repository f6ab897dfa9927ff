// The values of the interposer's --stats document (preload/stats.cpp, docs/BENCH_JSON.md), not only
// its keys: a snapshot whose every counter holds a value no other holds, so that a counter written
// under another's key shows; the copy-engine reach worked out by hand.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "preload/stats.h"

namespace {

using json = nlohmann::json;
using namespace tandem::preload;

Snapshot distinct_snapshot() {
  Snapshot s;
  s.pid = 4242;
  s.policy = "copy-engine+priority";
  s.policy_valid = false;
  s.compute_controls = "targeted";
  s.log_level = "info";
  s.launches = 101;
  s.calls_by_hook = {{"cuLaunchKernel", 102}, {"ncclAllReduce", 103}};
  s.captured = 104;
  s.collective_launches = 105;
  s.compute_launches = 106;
  s.collectives_elevated = 107;
  s.compute_shaped = 108;
  s.skipped = {{"cooperative", 109}, {"cluster", 110}};
  s.collectives_not_elevated = {{"excluded", 111}};
  s.shaped_launch_failures = 112;
  s.elevated_launch_failures = 113;
  s.cap_refreshes = 114;
  s.untracked_launches = 115;
  s.cublas_handles_capped = 116;
  s.cublaslt_descriptors_capped = 117;
  s.cublas_cap_failures = 118;
  s.cublas_gemms_capped_beside = 130;
  s.cublas_gemms_left_alone = 131;
  s.cublaslt_descriptors_left_alone = 132;
  s.communicators_created = 119;
  s.communicators_configured = 120;
  s.communicators_unconfigured = 121;
  s.communicators_destroyed = 122;
  s.communicator_settings = "nccl-cga:1";
  s.copy_engine_requested = true;
  s.copy_engine_staged_bytes = 123;
  s.copy_engine_peer_bytes = 136;
  s.copy_engine_peer_copies_unavailable = 137;
  s.copy_engine_pool_bytes = 124;
  s.copy_engine_buffer_bytes = 135;
  s.copy_engine_registrations = 125;
  s.copy_engine_captured = 126;
  s.copy_engine_routes = 133;
  s.copy_engine_calls = 134;
  s.last_collective_footprint = "640 threads, 96 regs/thread";
  // All-reduce: 10 calls, 1000 B, 4 (600 B) routed; all-gather: 6 calls, 200 B, 1 (50 B) routed.
  CollectiveSummary all_reduce;
  all_reduce.name = "ncclAllReduce";
  all_reduce.calls = 10;
  all_reduce.bytes = 1000;
  all_reduce.copy_engine = {"copy-engine", 4, 600};
  all_reduce.nccl_routes = {{"op-not-supported", 5, 300}, {"no-sum-kernel", 1, 100}};
  CollectiveSummary all_gather;
  all_gather.name = "ncclAllGather";
  all_gather.calls = 6;
  all_gather.bytes = 200;
  all_gather.copy_engine = {"copy-engine", 1, 50};
  all_gather.nccl_routes = {{"route-unavailable", 5, 150}};
  s.collectives = {all_reduce, all_gather};
  s.kernels = {{"gemm(float*)", "compute", 127, "shaped 3->2 blocks/SM"}, {"ncclDevKernel", "nccl", 128, "elevated"}};
  return s;
}

TEST(preload_stats_json, EveryCounterHasItsValue) {
  const json j = json::parse(render_json(distinct_snapshot()));
  EXPECT_EQ(j["front_end"], "tandem run");
  EXPECT_EQ(j["pid"], 4242);
  EXPECT_EQ(j["policy"], "copy-engine+priority");
  EXPECT_EQ(j["policy_valid"], false);
  EXPECT_EQ(j["compute_controls"], "targeted");
  EXPECT_EQ(j["log_level"], "info");
  EXPECT_EQ(j["launches"], json({{"total", 101}, {"nccl", 105}, {"compute", 106}, {"captured", 104}}));
  EXPECT_EQ(j["calls_by_hook"], json({{"cuLaunchKernel", 102}, {"ncclAllReduce", 103}}));
  EXPECT_EQ(j["nccl_elevated"], 107);
  EXPECT_EQ(j["nccl_not_elevated"], json({{"excluded", 111}}));
  EXPECT_EQ(j["compute_shaped"], 108);
  EXPECT_EQ(j["skipped"], json({{"cooperative", 109}, {"cluster", 110}}));
  EXPECT_EQ(j["failures"], json({{"shaped_retried_unshaped", 112},
                                 {"elevated_retried_as_issued", 113},
                                 {"smem_limit_raised_again", 114},
                                 {"untracked_launches", 115}}));
  EXPECT_EQ(j["cublas"], json({{"handles_capped", 116},
                               {"lt_descriptors_capped", 117},
                               {"cap_failures", 118},
                               {"gemms_capped_beside_collective", 130},
                               {"gemms_left_alone", 131},
                               {"lt_descriptors_left_alone", 132}}));
  const json& c = j["nccl_communicators"];
  EXPECT_EQ(c["created"], 119);
  EXPECT_EQ(c["configured"], 120);
  EXPECT_EQ(c["unconfigured"], 121);
  EXPECT_EQ(c["destroyed"], 122);
  EXPECT_EQ(c["settings"], "nccl-cga:1");
  EXPECT_EQ(j["copy_engine_route"], json({{"calls", 134},
                                          {"captured", 126},
                                          {"staged_bytes", 123},
                                          {"peer_bytes", 136},
                                          {"peer_copies_unavailable", 137},
                                          {"pool_bytes", 124},
                                          {"buffer_bytes", 135},
                                          {"registrations", 125},
                                          {"routes", 133}}));
  EXPECT_EQ(j["last_nccl_footprint"], "640 threads, 96 regs/thread");
  EXPECT_EQ(j["kernels"][1],
            json({{"name", "ncclDevKernel"}, {"kind", "nccl"}, {"launches", 128}, {"decision", "elevated"}}));
}

TEST(preload_stats_json, CollectivesByRouteAndTheReach) {
  const json j = json::parse(render_json(distinct_snapshot()));
  const json& ar = j["nccl_collectives"]["ncclAllReduce"];
  EXPECT_EQ(ar["calls"], 10);
  EXPECT_EQ(ar["bytes"], 1000);
  EXPECT_EQ(ar["copy_engine"], json({{"calls", 4}, {"bytes", 600}}));
  EXPECT_EQ(ar["nccl"], json({{"op-not-supported", {{"calls", 5}, {"bytes", 300}}},
                              {"no-sum-kernel", {{"calls", 1}, {"bytes", 100}}}}));
  EXPECT_EQ(j["nccl_collectives"]["ncclAllGather"]["copy_engine"], json({{"calls", 1}, {"bytes", 50}}));
  // Over both collectives: 5 of 16 calls, 650 of 1200 B routed; the share is of the bytes.
  const json& reach = j["copy_engine_reach"];
  EXPECT_EQ(reach["requested"], true);
  EXPECT_EQ(reach["calls"], 5);
  EXPECT_EQ(reach["bytes"], 650);
  EXPECT_EQ(reach["total_calls"], 16);
  EXPECT_EQ(reach["total_bytes"], 1200);
  EXPECT_DOUBLE_EQ(reach["share_of_bytes"].get<double>(), 650.0 / 1200.0);
  // The summary says the same.
  const std::string text = render_text(distinct_snapshot());
  EXPECT_NE(text.find("copy-engine reach: 54.17 % of the collective bytes (650 of 1200 B, 5 of 16 calls)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ncclAllReduce: 10 calls, 1000 B; copy-engine 4 (600 B), nccl 6 (400 B: op-not-supported 5 / "
                      "300 B, no-sum-kernel 1 / 100 B)"),
            std::string::npos)
      << text;
}

}  // namespace
