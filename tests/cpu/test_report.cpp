#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "harness/baselines.h"
#include "report/report.h"
#include "tandem/footprint_text.h"
#include "tandem/gpu_catalog.h"

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

namespace {

// Display columns, not bytes: "—" is one column in three bytes.
size_t columns(const std::string& text) {
  size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

const std::string kDash = "\u2014";

}  // namespace

TEST(Report, UndefinedFiguresPrintAsADashNeverANumber) {
  tb::Row r = sample_row();
  r.efficiency = std::numeric_limits<double>::quiet_NaN();
  r.comm_slowdown = std::numeric_limits<double>::quiet_NaN();
  const std::string text = tb::row_text(r);
  EXPECT_EQ(count_of(text, kDash), 2u) << text;
  EXPECT_EQ(text.find("60.6"), std::string::npos) << text;
  EXPECT_EQ(text.find("nan"), std::string::npos) << text;
  // The dash keeps the columns where a number would be.
  EXPECT_EQ(columns(text), columns(tb::row_text(sample_row())));
  const auto doc = tb::to_json({}, {r}, {});
  EXPECT_TRUE(doc["rows"][0]["efficiency"].is_null());
  EXPECT_TRUE(doc["rows"][0]["comm_slowdown"].is_null());
  EXPECT_EQ(tb::percent_text(r.efficiency), kDash + " (undefined)");
  EXPECT_EQ(tb::percent_text(0.916), "92 %");
}

TEST(Report, EachReasonForAnUndefinedFigureIsANote) {
  tb::Row a = sample_row(), b = sample_row(), c = sample_row();
  a.efficiency = b.efficiency = std::numeric_limits<double>::quiet_NaN();
  a.undefined = {{"efficiency", "t_seq - t_bound is within the spread"}};
  b.undefined = {{"efficiency", "t_seq - t_bound is within the spread"}, {"comm_slowdown", "t_comm is zero"}};
  b.comm_slowdown = std::numeric_limits<double>::quiet_NaN();
  const std::vector<tb::Row> rows = {a, b, c};
  const auto notes = tb::undefined_notes(rows);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0], "efficiency undefined (" + kDash +
                          " in the table, null in JSON) in 2 of 3 rows: " + "t_seq - t_bound is within the spread");
  EXPECT_EQ(notes[1],
            "comm_slowdown undefined (" + kDash + " in the table, null in JSON) in 1 of 3 rows: " + "t_comm is zero");
  // In the footer, before the run's other notes, and in the JSON's notes.
  const std::string footer = tb::footer_text(rows, {"shape:3 skipped for gemm"});
  EXPECT_LT(footer.find("# note: " + notes[0]), footer.find("# note: shape:3 skipped"));
  EXPECT_NE(footer.find("# OK: 3 rows"), std::string::npos);  // some figures remain
  const auto doc = tb::to_json({}, rows, {"shape:3 skipped for gemm"});
  EXPECT_EQ(doc["notes"], nlohmann::json({notes[0], notes[1], "shape:3 skipped for gemm"}));
  EXPECT_EQ(doc["rows"][1]["undefined"]["comm_slowdown"], "t_comm is zero");
  EXPECT_EQ(doc["rows"][2]["undefined"], nlohmann::json::object());
}

TEST(Report, FillTimesLeavesAFigureUndefinedWhenItsDenominatorIsWithinTheSpread) {
  tb::Baselines base;
  base.compute = {2.0, 1.9, 2.1};
  base.comm = {0.1, 0.05, 0.3};  // the collective alone, noisier than it is long
  base.seq = {2.1, 2.0, 2.2};
  base.bound_ms = 2.0;  // t_seq - t_bound = 0.1 ms, inside 0.2 + 0.25 ms of noise
  tb::Row r;
  r.ranks = 2;
  tb::fill_times(r, base, {1.95, 1.9, 2.0}, 2.0, 0.1, /*sequential=*/false, 1e6, 1.0);
  EXPECT_TRUE(std::isnan(r.efficiency));
  EXPECT_TRUE(std::isnan(r.comm_slowdown));
  EXPECT_NEAR(r.reduction, 1 - 1.95 / 2.1, 1e-12);  // t_seq stands far out of its noise
  EXPECT_DOUBLE_EQ(r.compute_slowdown, 1.0);
  ASSERT_EQ(r.undefined.size(), 2u);
  EXPECT_EQ(r.undefined[0].figure, "efficiency");
  EXPECT_NE(r.undefined[0].reason.find("t_seq - t_bound is within the spread"), std::string::npos);
  EXPECT_EQ(r.undefined[1].figure, "comm_slowdown");
  // A zero denominator says so.
  base.comm = {0, 0, 0};
  tb::Row zero;
  zero.ranks = 2;
  tb::fill_times(zero, base, {1.95, 1.9, 2.0}, 2.0, 0, false, 1e6, 1.0);
  ASSERT_FALSE(zero.undefined.empty());
  EXPECT_EQ(zero.undefined.back().figure, "comm_slowdown");
  EXPECT_EQ(zero.undefined.back().reason, "t_comm is zero");
}

namespace {

// A row of one rank: the compute alone as given, a 0.26 ms local copy for the collective, the step
// under the policy 2.3 ms.
tb::Row one_rank_row(const tb::Summary& compute) {
  tb::Baselines base;
  base.compute = compute;
  base.comm = {0.26, 0.25, 0.27};
  base.seq = {compute.median + 0.3, compute.median + 0.29, compute.median + 0.31};
  base.bound_ms = compute.median;
  tb::Row r = sample_row();
  r.ranks = 1;
  tb::fill_times(r, base, {2.3, 2.3, 2.3}, compute.median, 0.26, false, 1e6, 0.0);
  return r;
}

}  // namespace

TEST(Report, OneRankLeavesEveryOverlapFigureUndefined) {
  tb::Row r = one_rank_row({2.0, 1.99, 2.01});
  for (double figure : {r.reduction, r.efficiency, r.compute_slowdown, r.comm_slowdown})
    EXPECT_TRUE(std::isnan(figure));
  ASSERT_EQ(r.undefined.size(), 4u);
  for (const auto& u : r.undefined) EXPECT_EQ(u.reason, tb::kOneRankReason);
  const std::string text = tb::row_text(r);
  EXPECT_EQ(count_of(text, kDash), 4u) << text;
  // Every figure of every row undefined: the closing line says so instead of OK.
  const std::string footer = tb::footer_text({r, r}, {});
  EXPECT_EQ(footer.find("# OK"), std::string::npos) << footer;
  EXPECT_NE(footer.find("# NO FIGURES: 2 rows, 0 wrong elements"), std::string::npos) << footer;
  EXPECT_TRUE(tb::passed({r, r}));  // correct results still pass
  // Wrong elements still fail.
  r.wrong = 3;
  EXPECT_NE(tb::footer_text({r}, {}).find("# FAILED: 3 wrong elements"), std::string::npos);
}

TEST(Report, OneGpuRowsShowTheComputeTax) {
  tb::Row r = one_rank_row({2.0, 1.98, 2.04});
  tb::fill_compute_tax(r, {2.5, 2.45, 2.6});
  EXPECT_TRUE(r.one_gpu);
  EXPECT_DOUBLE_EQ(r.compute_tax, 0.25);
  const std::string text = tb::row_text(r);
  EXPECT_NE(text.find("25.0"), std::string::npos) << text;   // the tax, in percent
  EXPECT_NE(text.find("2.500"), std::string::npos) << text;  // the compute under the policy
  EXPECT_NE(text.find("3.0"), std::string::npos) << text;    // the default compute's spread, 0.06 / 2.0
  EXPECT_EQ(count_of(text, kDash), 0u) << text;              // no overlap column in this table
  const std::string header = tb::column_header_text(true);
  for (const char* column : {"t_policy", "tax", "spread"}) EXPECT_NE(header.find(column), std::string::npos);
  EXPECT_EQ(header.find("effic."), std::string::npos);
  // The overlap figures stay undefined (notes), yet the table's own figure is defined: OK.
  EXPECT_NE(tb::footer_text({r}, {}).find("# OK: 1 rows"), std::string::npos);
  // A compute too short to tell from its own noise has no tax.
  tb::Row tiny = one_rank_row({0.01, 0.0, 0.02});
  tb::fill_compute_tax(tiny, {0.011, 0.01, 0.012});
  EXPECT_TRUE(std::isnan(tiny.compute_tax));
  EXPECT_EQ(count_of(tb::row_text(tiny), kDash), 1u);
  EXPECT_EQ(tb::footer_text({tiny}, {}).find("# OK"), std::string::npos);
  const auto doc = tb::to_json({}, {r, tiny}, {});
  EXPECT_DOUBLE_EQ(doc["rows"][0]["compute_tax"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(doc["rows"][0]["t_compute_policy_max_ms"].get<double>(), 2.6);
  EXPECT_TRUE(doc["rows"][1]["compute_tax"].is_null());
  EXPECT_EQ(doc["rows"][1]["undefined"]["compute_tax"],
            "t_compute is within the spread (max - min) of the timed steps it is made of");
}

TEST(Report, OneGpuRunCarriesTheResidencyPlan) {
  const tandem::DeviceLimits& gpu = tandem::gpu_limits("h200");
  tb::ResidencyPlan plan;
  plan.workload = "tiled-gemm";
  plan.gpu = gpu.name;
  plan.kernel = tandem::parse_footprint("threads=256,regs=64,smem=33024");
  plan.comm = tandem::typical_nccl_footprint(gpu);
  plan.natural_blocks_per_sm = tandem::residency(gpu, plan.kernel).blocks_per_sm;
  plan.levels = tandem::plan_levels(gpu, plan.kernel, plan.comm, std::nullopt);
  ASSERT_GE(plan.levels.size(), 2u);
  EXPECT_EQ(plan.levels.front().blocks_per_sm, plan.natural_blocks_per_sm);
  const std::string text = tb::residency_plan_text({plan});
  EXPECT_EQ(text.rfind("# plan      tiled-gemm on " + gpu.name, 0), 0u) << text;
  EXPECT_EQ(count_of(text, "\n#   "), plan.levels.size() + 1) << text;  // a column header, then each level
  tb::RunInfo info;
  info.one_gpu = true;
  const auto doc = tb::to_json(info, {}, {}, true, {plan});
  ASSERT_EQ(doc["residency_plans"].size(), 1u);
  EXPECT_EQ(doc["residency_plans"][0]["levels"].size(), plan.levels.size());
  EXPECT_EQ(doc["residency_plans"][0]["levels"][0]["blocks_per_sm"], plan.natural_blocks_per_sm);
  EXPECT_FALSE(tb::to_json({}, {}, {}).contains("residency_plans"));
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
  r.ranks = 2;
  tb::fill_times(r, base, {3.0, 2.9, 3.2}, 2.5, 2.4, /*sequential=*/false, 1.6e9, 1.0);
  EXPECT_DOUBLE_EQ(r.t_seq_ms, 4.0);
  EXPECT_DOUBLE_EQ(r.t_overlap_ms, 3.0);
  EXPECT_DOUBLE_EQ(r.t_overlap_max_ms, 3.2);
  EXPECT_DOUBLE_EQ(r.reduction, 0.25);
  EXPECT_DOUBLE_EQ(r.efficiency, 0.5);
  EXPECT_DOUBLE_EQ(r.compute_slowdown, 1.25);
  EXPECT_DOUBLE_EQ(r.comm_slowdown, 1.5);
  EXPECT_DOUBLE_EQ(r.algbw_gbps, 1000);  // 1.6 GB in 1.6 ms
  EXPECT_TRUE(r.undefined.empty());
  EXPECT_DOUBLE_EQ(r.t_seq_min_ms, 3.9);
  EXPECT_DOUBLE_EQ(r.t_comm_max_ms, 1.7);
  tb::fill_times(r, base, {4.0, 4.0, 4.0}, 0, 0, /*sequential=*/true, 1.6e9, 2.0);
  EXPECT_DOUBLE_EQ(r.compute_slowdown, 1.0);
  EXPECT_DOUBLE_EQ(r.busbw_gbps, 2000);
}
