#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "harness/baselines.h"
#include "report/report.h"

namespace tb = tandem::bench;

namespace {
tb::Row sample_row() {
  tb::Row r;
  r.workload = "stream";
  r.collective = "all-reduce";
  r.dtype = "bf16";
  r.bytes = 536870912;
  r.ranks = 2;
  r.count = 10;
  r.policy = "shape:3+priority";
  r.t_compute_ms = 1.883;
  r.t_comm_ms = 1.844;
  r.t_seq_ms = 3.583;
  r.t_overlap_ms = 2.723;
  r.t_overlap_min_ms = 2.7;
  r.t_overlap_max_ms = 2.75;
  r.t_bound_ms = 2.162;
  r.reduction = 0.24;
  r.efficiency = 0.606;
  r.compute_slowdown = 1.44;
  r.comm_slowdown = 1.12;
  r.busbw_gbps = 291.2;
  r.compute_blocks_per_sm = 3;
  return r;
}
}  // namespace

TEST(Report, RowHasFixedColumnsAndUnits) {
  const std::string text = tb::row_text(sample_row());
  EXPECT_NE(text.find("shape:3+priority"), std::string::npos);
  EXPECT_NE(text.find("2.723"), std::string::npos);
  EXPECT_NE(text.find("60.6"), std::string::npos);  // efficiency in percent
  EXPECT_EQ(text.back(), '\n');
  const std::string header = tb::column_header_text();
  EXPECT_EQ(header.front(), '#');
  for (const char* unit : {"(ms)", "(%)", "(GB/s)", "(B)"}) EXPECT_NE(header.find(unit), std::string::npos) << unit;
  // Column widths do not depend on the values.
  tb::Row other = sample_row();
  other.t_overlap_ms = 12.5;
  EXPECT_EQ(tb::row_text(other).size(), text.size());
}

TEST(Report, UndefinedEfficiencyPrintsNaNotGarbage) {
  tb::Row r = sample_row();
  r.efficiency = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(tb::row_text(r).find("n/a"), std::string::npos);
  const auto doc = tb::to_json({}, {r}, {});
  EXPECT_TRUE(doc["rows"][0]["efficiency"].is_null());
}

TEST(Report, FooterSaysOkOrFailed) {
  EXPECT_NE(tb::footer_text({sample_row()}, {}).find("# OK: 1 rows, 0 wrong elements"), std::string::npos);
  tb::Row bad = sample_row();
  bad.wrong = 7;
  EXPECT_NE(tb::footer_text({sample_row(), bad}, {}).find("# FAILED: 7 wrong elements across 2 rows"),
            std::string::npos);
  EXPECT_NE(tb::footer_text({}, {}).find("FAILED"), std::string::npos);
  EXPECT_NE(tb::footer_text({sample_row()}, {"shape:3 skipped for gemm"}).find("# note: shape:3 skipped"),
            std::string::npos);
}

TEST(Report, JsonHasEveryDocumentedField) {
  tb::RunInfo info;
  info.tandem_version = "0.1.0";
  info.commit = "abc";
  info.command = "tandem bench";
  info.date = "2026-11-30T00:00:00Z";
  info.gpu = "NVIDIA H200";
  info.gpus = 2;
  info.driver = "13.0";
  info.cuda = "13.0";
  info.nccl = "2.28.3";
  const auto doc = tb::to_json(info, {sample_row()}, {"a note"});
  for (const char* key : {"tool", "tandem_version", "commit", "command", "date", "gpu", "gpus", "driver", "cuda",
                          "nccl", "hbm_bandwidth_gbps", "config", "notes", "rows"})
    EXPECT_TRUE(doc.contains(key)) << key;
  const auto& row = doc["rows"][0];
  for (const char* key : {"workload",      "collective", "dtype",        "bytes",      "policy",
                          "tuned",         "tune_role",  "t_compute_ms", "t_comm_ms",  "t_seq_ms",
                          "t_overlap_ms",  "t_bound_ms", "reduction",    "efficiency", "compute_slowdown",
                          "comm_slowdown", "busbw_gbps", "wrong",        "count",      "compute_kernel",
                          "comm_kernel"})
    EXPECT_TRUE(row.contains(key)) << key;
  EXPECT_EQ(row["policy"], "shape:3+priority");
  EXPECT_EQ(row["bytes"], 536870912u);
  EXPECT_DOUBLE_EQ(row["efficiency"].get<double>(), 0.606);
  EXPECT_EQ(doc["notes"][0], "a note");
}

TEST(Report, FillTimesDerivesEveryMetricFromTheDefaultBaselines) {
  tb::Baselines base;
  base.compute = {2.0, 1.9, 2.1};
  base.comm = {1.6, 1.5, 1.7};
  base.seq = {4.0, 3.9, 4.1};
  base.bound_ms = 2.0;
  tb::Row r;
  tb::fill_times(r, base, {3.0, 2.9, 3.2}, 2.5, 2.4, /*sequential=*/false, 1.6e9, 1.0);
  EXPECT_DOUBLE_EQ(r.t_seq_ms, 4.0);
  EXPECT_DOUBLE_EQ(r.t_overlap_ms, 3.0);
  EXPECT_DOUBLE_EQ(r.t_overlap_max_ms, 3.2);
  EXPECT_DOUBLE_EQ(r.reduction, 0.25);
  EXPECT_DOUBLE_EQ(r.efficiency, 0.5);
  EXPECT_DOUBLE_EQ(r.compute_slowdown, 1.25);
  EXPECT_DOUBLE_EQ(r.comm_slowdown, 1.5);
  EXPECT_DOUBLE_EQ(r.algbw_gbps, 1000);  // 1.6 GB in 1.6 ms
  tb::fill_times(r, base, {4.0, 4.0, 4.0}, 0, 0, /*sequential=*/true, 1.6e9, 2.0);
  EXPECT_DOUBLE_EQ(r.compute_slowdown, 1.0);
  EXPECT_DOUBLE_EQ(r.busbw_gbps, 2000);
}
