// The values of the --json document (docs/BENCH_JSON.md), not only its keys: a row and a run whose
// every field holds a value no other field holds, so that a field written under another's key, or
// one read from the wrong member, shows.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "report/report.h"

namespace tb = tandem::bench;
using json = nlohmann::json;

namespace {

tb::FootprintRecord footprint(const std::string& kernel, int base) {
  tb::FootprintRecord f;
  f.kernel = kernel;
  f.grid_blocks = base + 1;
  f.footprint.threads_per_block = base + 2;
  f.footprint.regs_per_thread = base + 3;
  f.footprint.static_smem = base + 4;
  f.footprint.dynamic_smem = base + 5;
  f.footprint.cluster_size = base + 6;
  f.blocks_per_sm = base + 7;
  return f;
}

// Every number distinct from every other, in the document's units.
tb::Row distinct_row() {
  tb::Row r;
  r.workload = "tiled-gemm";
  r.collective = "reduce-scatter";
  r.dtype = "fp16";
  r.bytes = 12345678;
  r.ranks = 3;
  r.count = 17;
  r.policy = "shape:2+priority";
  r.tuned = true;
  r.tune_role = "paper";
  r.t_compute_ms = 1.25;
  r.t_comm_ms = 1.5;
  r.t_seq_ms = 2.75;
  r.t_overlap_ms = 2.0;
  r.t_overlap_min_ms = 1.875;
  r.t_overlap_max_ms = 2.125;
  r.t_bound_ms = 1.625;
  r.t_chain_ms = 2.5;
  r.reduction = 0.2727;
  r.efficiency = 0.6667;
  r.compute_slowdown = 1.1;
  r.comm_slowdown = 1.3;
  r.algbw_gbps = 8.25;
  r.busbw_gbps = 5.5;
  r.wrong = 4;
  r.compute_blocks_per_sm = 2;
  r.shape_dynamic_smem = 76928;
  r.t_compute_min_ms = 1.0625;
  r.t_compute_max_ms = 1.4375;
  r.t_comm_min_ms = 1.3125;
  r.t_comm_max_ms = 1.6875;
  r.t_seq_min_ms = 2.5625;
  r.t_seq_max_ms = 2.9375;
  r.compute_kernel = footprint("tiled_gemm_kernel", 100);
  r.comm_kernel = footprint("ncclDevKernel_ReduceScatter", 200);
  return r;
}

tb::RunInfo distinct_run() {
  tb::RunInfo i;
  i.tool = "tune";
  i.tandem_version = "0.9.1";
  i.commit = "abc1234";
  i.command = "tandem tune --workload tiled-gemm";
  i.date = "2026-12-01T10:00:00Z";
  i.gpu = "NVIDIA H200";
  i.gpus = 2;
  i.driver = "13.0";
  i.cuda = "13.1";
  i.nccl = "2.28.9";
  i.launch = "torchrun";
  i.world_size = 4;
  i.rendezvous = "file:/tmp/r";
  i.hbm_bandwidth_gbps = 4321.5;
  i.config = {"balance on", "iters 20"};
  return i;
}

TEST(ReportJson, TheRunsIdentityHasItsValues) {
  const json doc = tb::to_json(distinct_run(), {}, {"n1", "n2"}, false);
  EXPECT_EQ(doc["schema_version"], tb::kBenchJsonSchemaVersion);
  EXPECT_EQ(doc["complete"], false);
  EXPECT_EQ(doc["tool"], "tune");
  EXPECT_EQ(doc["tandem_version"], "0.9.1");
  EXPECT_EQ(doc["commit"], "abc1234");
  EXPECT_EQ(doc["command"], "tandem tune --workload tiled-gemm");
  EXPECT_EQ(doc["date"], "2026-12-01T10:00:00Z");
  EXPECT_EQ(doc["gpu"], "NVIDIA H200");
  EXPECT_EQ(doc["gpus"], 2);
  EXPECT_EQ(doc["driver"], "13.0");
  EXPECT_EQ(doc["cuda"], "13.1");
  EXPECT_EQ(doc["nccl"], "2.28.9");
  EXPECT_EQ(doc["launch"], "torchrun");
  EXPECT_EQ(doc["world_size"], 4);
  EXPECT_EQ(doc["rendezvous"], "file:/tmp/r");
  EXPECT_EQ(doc["hbm_bandwidth_gbps"], 4321.5);
  EXPECT_EQ(doc["config"], json({"balance on", "iters 20"}));
  EXPECT_EQ(doc["notes"], json({"n1", "n2"}));
  EXPECT_EQ(doc["rows"], json::array());
  // Threads, no rendezvous: the key is left out; a finished document says so.
  tb::RunInfo threads;
  const json plain = tb::to_json(threads, {}, {});
  EXPECT_FALSE(plain.contains("rendezvous"));
  EXPECT_EQ(plain["complete"], true);
}

TEST(ReportJson, EveryRowFieldHasItsValue) {
  const json row = tb::to_json(distinct_run(), {distinct_row()}, {})["rows"][0];
  const json expected = {{"workload", "tiled-gemm"},
                         {"collective", "reduce-scatter"},
                         {"dtype", "fp16"},
                         {"bytes", 12345678},
                         {"ranks", 3},
                         {"count", 17},
                         {"policy", "shape:2+priority"},
                         {"tuned", true},
                         {"tune_role", "paper"},
                         {"t_compute_ms", 1.25},
                         {"t_comm_ms", 1.5},
                         {"t_seq_ms", 2.75},
                         {"t_overlap_ms", 2.0},
                         {"t_overlap_min_ms", 1.875},
                         {"t_overlap_max_ms", 2.125},
                         {"t_bound_ms", 1.625},
                         {"t_chain_ms", 2.5},
                         {"bound_fraction", 1.625 / 2.0},  // t_bound / t_overlap: 1 = at the bound
                         {"reduction", 0.2727},
                         {"efficiency", 0.6667},
                         {"compute_slowdown", 1.1},
                         {"comm_slowdown", 1.3},
                         {"algbw_gbps", 8.25},
                         {"busbw_gbps", 5.5},
                         {"wrong", 4},
                         {"compute_blocks_per_sm", 2},
                         {"shape_dynamic_smem", 76928},
                         {"compute_kernel",
                          {{"kernel", "tiled_gemm_kernel"},
                           {"grid_blocks", 101},
                           {"threads_per_block", 102},
                           {"regs_per_thread", 103},
                           {"static_smem", 104},
                           {"dynamic_smem", 105},
                           {"cluster_size", 106},
                           {"blocks_per_sm", 107}}},
                         {"comm_kernel",
                          {{"kernel", "ncclDevKernel_ReduceScatter"},
                           {"grid_blocks", 201},
                           {"threads_per_block", 202},
                           {"regs_per_thread", 203},
                           {"static_smem", 204},
                           {"dynamic_smem", 205},
                           {"cluster_size", 206},
                           {"blocks_per_sm", 207}}},
                         {"t_compute_min_ms", 1.0625},
                         {"t_compute_max_ms", 1.4375},
                         {"t_comm_min_ms", 1.3125},
                         {"t_comm_max_ms", 1.6875},
                         {"t_seq_min_ms", 2.5625},
                         {"t_seq_max_ms", 2.9375},
                         {"undefined", json::object()}};
  EXPECT_EQ(row, expected) << row.dump(1);
}

TEST(ReportJson, EveryUndefinedFigureIsNullWithItsReason) {
  tb::Row r = distinct_row();
  r.reduction = r.efficiency = r.compute_slowdown = r.comm_slowdown = std::nan("");
  r.undefined = {
      {"reduction", "why 1"}, {"efficiency", "why 2"}, {"compute_slowdown", "why 3"}, {"comm_slowdown", "why 3"}};
  const json doc = tb::to_json({}, {r}, {"n1"});
  const json& row = doc["rows"][0];
  for (const char* figure : {"reduction", "efficiency", "compute_slowdown", "comm_slowdown"})
    EXPECT_TRUE(row[figure].is_null()) << figure;
  EXPECT_EQ(row["undefined"], json({{"reduction", "why 1"},
                                    {"efficiency", "why 2"},
                                    {"compute_slowdown", "why 3"},
                                    {"comm_slowdown", "why 3"}}));
  EXPECT_EQ(doc["notes"].size(), 4u);  // one per reason, then the run's own
  EXPECT_EQ(doc["notes"][2].get<std::string>().rfind("compute_slowdown, comm_slowdown undefined", 0), 0u);
  EXPECT_EQ(doc["notes"][3], "n1");
  EXPECT_FALSE(row.contains("compute_tax"));  // not a one-GPU row
}

TEST(ReportJson, AOneGpuRowHasItsComputeTax) {
  tb::Row r = distinct_row();
  r.one_gpu = true;
  r.t_compute_policy_ms = 1.75;
  r.t_compute_policy_min_ms = 1.5625;
  r.t_compute_policy_max_ms = 1.8125;
  r.compute_tax = 0.4;
  tb::RunInfo info = distinct_run();
  info.one_gpu = true;
  const json doc = tb::to_json(info, {r}, {});
  EXPECT_EQ(doc["one_gpu"], true);
  EXPECT_EQ(doc["residency_plans"], json::array());
  const json& row = doc["rows"][0];
  EXPECT_EQ(row["t_compute_policy_ms"], 1.75);
  EXPECT_EQ(row["t_compute_policy_min_ms"], 1.5625);
  EXPECT_EQ(row["t_compute_policy_max_ms"], 1.8125);
  EXPECT_EQ(row["compute_tax"], 0.4);
  EXPECT_EQ(tb::to_json(distinct_run(), {}, {})["one_gpu"], false);
}

TEST(ReportJson, RowsKeepTheirOrderAndUndefinedValuesAreNull) {
  tb::Row first = distinct_row(), second = distinct_row();
  second.policy = "priority";
  second.t_overlap_ms = 0;  // not measured: no bound fraction
  second.reduction = std::nan("");
  const json rows = tb::to_json({}, {first, second}, {})["rows"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["policy"], "shape:2+priority");
  EXPECT_EQ(rows[1]["policy"], "priority");
  EXPECT_TRUE(rows[1]["bound_fraction"].is_null());
  EXPECT_TRUE(rows[1]["reduction"].is_null());
  EXPECT_EQ(rows[1]["efficiency"], 0.6667);
}

}  // namespace
