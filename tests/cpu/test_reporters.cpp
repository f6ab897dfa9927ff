// The reporters `tandem bench` drives (report/reporter.h): the console's bytes are the sequence the
// command printed before reporters existed (header, column header, rows as they come, footer), the
// --json file holds every row reported so far and is marked complete only at the end, the --trace
// file carries the run's identity, and a fan-out of reporters calls each in order.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "report/console_reporter.h"
#include "report/json_reporter.h"
#include "report/trace_reporter.h"
#include "scratch_folder.h"
#include "tandem/error.h"

namespace tb = tandem::bench;
using nlohmann::json;
using tandem_test::read_text;
using tandem_test::ScratchFolder;

namespace {

tb::RunInfo run_info(const std::string& tool = "bench") {
  tb::RunInfo info;
  info.tool = tool;
  info.tandem_version = "0.1.0";
  info.commit = "abc1234";
  info.command = "tandem bench --json out.json";
  info.date = "2026-12-01T06:00:00Z";
  info.gpu = "NVIDIA H200";
  info.gpus = 2;
  info.world_size = 2;
  info.config = {"workloads gemm"};
  return info;
}

tb::Row row(const std::string& policy, double t_overlap_ms, double t_bound_ms, int64_t wrong = 0) {
  tb::Row r;
  r.workload = "gemm";
  r.collective = "all-reduce";
  r.dtype = "bf16";
  r.bytes = 512ull << 20;
  r.ranks = 2;
  r.count = 3;
  r.policy = policy;
  r.t_overlap_ms = t_overlap_ms;
  r.t_bound_ms = t_bound_ms;
  r.wrong = wrong;
  return r;
}

// What was written to a temporary FILE*.
std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), f)) > 0;) out.append(buffer, n);
  return out;
}

struct TempFile {
  std::FILE* f = std::tmpfile();
  ~TempFile() {
    if (f) std::fclose(f);
  }
};

}  // namespace

TEST(ConsoleReporter, PrintsWhatTheCommandPrintedInTheSameOrder) {
  TempFile out, err;
  ASSERT_TRUE(out.f && err.f);
  tb::ConsoleReporter console(/*progress=*/true, out.f, err.f);
  const tb::RunInfo info = run_info();
  const tb::Row a = row("concurrent", 4.0, 3.0), b = row("priority", 3.5, 3.0);
  console.report_context(info);
  // Rows reach stdout as they are measured, each flushed: a reader of a pipe sees them at once.
  EXPECT_EQ(contents(out.f), tb::header_text(info) + tb::column_header_text());
  console.report_row(a);
  console.report_row(b);
  tb::RunResults results;
  results.rows = {a, b};
  results.notes = {"shape:auto skipped for gemm: no room"};
  console.report_end(results);
  const std::string text = contents(out.f);
  EXPECT_EQ(text, tb::header_text(info) + tb::column_header_text() + tb::row_text(a) + tb::row_text(b) +
                      "# note: shape:auto skipped for gemm: no room\n# OK: 2 rows, 0 wrong elements\n");
  EXPECT_EQ(text.rfind("# tandem bench 0.1.0 (abc1234)\n", 0), 0u);
  EXPECT_EQ(contents(err.f), "");  // no progress reported
}

TEST(ConsoleReporter, ProgressGoesToStderrNamedByTheToolUnlessQuiet) {
  TempFile out, err, quiet_out, quiet_err;
  tb::ConsoleReporter console(/*progress=*/true, out.f, err.f);
  console.report_context(run_info("tune"));
  console.report_progress("[1/4] tuning gemm all-reduce 512MiB");
  EXPECT_EQ(contents(err.f), "tandem tune: [1/4] tuning gemm all-reduce 512MiB\n");

  tb::ConsoleReporter quiet(/*progress=*/false, quiet_out.f, quiet_err.f);
  quiet.report_context(run_info());
  quiet.report_progress("[1/4] gemm");
  EXPECT_EQ(contents(quiet_err.f), "");
}

TEST(ConsoleReporter, AFailedRunSaysFailed) {
  TempFile out, err;
  tb::ConsoleReporter console(true, out.f, err.f);
  console.report_context(run_info());
  tb::RunResults results;
  results.rows = {row("priority", 3.5, 3.0, /*wrong=*/7)};
  console.report_end(results);
  const std::string text = contents(out.f);
  EXPECT_NE(text.find("# FAILED: 7 wrong elements across 1 rows\n"), std::string::npos);
}

TEST(JsonReporter, EveryRowReachesTheFileMarkedIncompleteUntilTheEnd) {
  ScratchFolder dir;
  const std::string path = dir.path("results.json").string();
  tb::JsonReporter reporter(path);
  reporter.report_context(run_info());
  reporter.report_row(row("concurrent", 4.0, 3.0));
  json doc = json::parse(read_text(path));
  EXPECT_EQ(doc["schema_version"], 2);
  EXPECT_EQ(doc["complete"], false);
  EXPECT_EQ(doc["rows"].size(), 1u);
  EXPECT_EQ(doc["hbm_bandwidth_gbps"], 0.0);  // not known before the end
  EXPECT_TRUE(doc["notes"].empty());

  reporter.report_row(row("priority", 3.5, 3.0));
  EXPECT_EQ(json::parse(read_text(path))["rows"].size(), 2u);

  tb::RunResults results;
  results.rows = {row("concurrent", 4.0, 3.0), row("priority", 3.5, 3.0)};
  results.notes = {"a note"};
  results.hbm_bandwidth_gbps = 3900;
  reporter.report_end(results);
  const std::string text = read_text(path);
  EXPECT_EQ(text.back(), '\n');
  doc = json::parse(text);
  EXPECT_EQ(doc["complete"], true);
  EXPECT_EQ(doc["rows"].size(), 2u);
  EXPECT_EQ(doc["rows"][1]["policy"], "priority");
  EXPECT_EQ(doc["notes"], json::array({"a note"}));
  EXPECT_EQ(doc["hbm_bandwidth_gbps"], 3900.0);
  EXPECT_EQ(doc["tool"], "bench");
}

TEST(JsonReporter, RowsCarryTheirBoundFraction) {
  ScratchFolder dir;
  const std::string path = dir.path("results.json").string();
  tb::JsonReporter reporter(path);
  reporter.report_context(run_info());
  reporter.report_row(row("priority", 4.0, 3.0));
  EXPECT_DOUBLE_EQ(json::parse(read_text(path))["rows"][0]["bound_fraction"].get<double>(), 0.75);  // 3 / 4
}

TEST(JsonReporter, AnUnwritableFileWarnsOnceWhileMeasuringAndFailsAtTheEnd) {
  ScratchFolder dir;
  const std::string path = dir.path("missing-folder/results.json").string();
  tb::JsonReporter reporter(path);
  reporter.report_context(run_info());
  testing::internal::CaptureStderr();
  reporter.report_row(row("concurrent", 4.0, 3.0));
  reporter.report_row(row("priority", 3.5, 3.0));
  reporter.report_interrupted("a rank was lost");  // tries again, quietly: no second warning
  const std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_EQ(warnings.rfind("tandem bench: warning: ", 0), 0u) << warnings;
  EXPECT_NE(warnings.find("(retried after every row)\n"), std::string::npos) << warnings;
  EXPECT_EQ(warnings.find("warning", 30), std::string::npos) << "warned more than once: " << warnings;
  tb::RunResults results;
  results.rows = {row("concurrent", 4.0, 3.0)};
  EXPECT_THROW(reporter.report_end(results), tandem::Error);
}

TEST(TraceReporter, WritesTheTracesWithTheRunsIdentityButNoRows) {
  ScratchFolder dir;
  const std::string path = dir.path("trace.json").string();
  tb::TraceReporter reporter(path);
  reporter.report_context(run_info());
  tb::RunResults results;
  tb::TraceIteration it;
  it.workload = "tp-mlp";
  it.policy = "priority";
  it.spans = {{"L0.gemm", false, 0.0, 1.0, -1}};
  results.traces = {it};
  results.hbm_bandwidth_gbps = 3900;
  reporter.report_end(results);
  const json trace = json::parse(read_text(path));
  EXPECT_EQ(trace["otherData"]["commit"], "abc1234");
  EXPECT_EQ(trace["otherData"]["hbm_bandwidth_gbps"], 3900.0);
  EXPECT_FALSE(trace["otherData"].contains("rows"));
  EXPECT_FALSE(trace["otherData"].contains("notes"));
  EXPECT_FALSE(trace["traceEvents"].empty());
}

namespace {

// Records the calls it gets, as "<name>:<call>"; throws from report_interrupted when asked to.
class Recorder final : public tb::Reporter {
 public:
  Recorder(std::string name, std::vector<std::string>& log, bool throws = false)
      : name_(std::move(name)), log_(log), throws_(throws) {}
  void report_context(const tb::RunInfo&) override { log_.push_back(name_ + ":context"); }
  void report_progress(const std::string& line) override { log_.push_back(name_ + ":progress " + line); }
  void report_row(const tb::Row& r) override { log_.push_back(name_ + ":row " + r.policy); }
  void report_end(const tb::RunResults& r) override { log_.push_back(name_ + ":end " + std::to_string(r.rows.size())); }
  void report_interrupted(const std::string& why) override {
    log_.push_back(name_ + ":interrupted " + why);
    if (throws_) throw std::runtime_error("cannot keep");
  }

 private:
  std::string name_;
  std::vector<std::string>& log_;
  bool throws_;
};

}  // namespace

TEST(Reporters, CallEachReporterInTheOrderAdded) {
  std::vector<std::string> log;
  tb::Reporters all;
  all.add(std::make_unique<Recorder>("a", log)).add(std::make_unique<Recorder>("b", log));
  all.report_context(run_info());
  all.report_progress("[1/1]");
  all.report_row(row("priority", 3.5, 3.0));
  tb::RunResults results;
  results.rows = {row("priority", 3.5, 3.0)};
  all.report_end(results);
  EXPECT_EQ(log, (std::vector<std::string>{"a:context", "b:context", "a:progress [1/1]", "b:progress [1/1]",
                                           "a:row priority", "b:row priority", "a:end 1", "b:end 1"}));
}

TEST(Reporters, AnInterruptionReachesEveryReporterEvenIfOneFails) {
  std::vector<std::string> log;
  tb::Reporters all;
  all.add(std::make_unique<Recorder>("a", log, /*throws=*/true)).add(std::make_unique<Recorder>("b", log));
  EXPECT_NO_THROW(all.report_interrupted("time-out"));
  EXPECT_EQ(log, (std::vector<std::string>{"a:interrupted time-out", "b:interrupted time-out"}));
}

TEST(Report, ARunPassesWithRowsAndNoWrongElement) {
  EXPECT_FALSE(tb::passed({}));
  EXPECT_TRUE(tb::passed({row("concurrent", 4.0, 3.0), row("priority", 3.5, 3.0)}));
  EXPECT_FALSE(tb::passed({row("concurrent", 4.0, 3.0), row("priority", 3.5, 3.0, /*wrong=*/1)}));
}
