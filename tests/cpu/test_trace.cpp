// The Chrome trace tandem bench --trace writes: one process per (workload, policy), one thread per
// rank and stream, one complete event per operation, with the operation it waited for.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>

#include "error_of.h"
#include "report/trace.h"

namespace tb = tandem::bench;
using nlohmann::json;

namespace {

using tandem_test::error_of;

// gemm -> reduce-scatter -> add, overlapped, on `rank`: the add waits for the reduce-scatter.
tb::TraceIteration overlapped(int rank, double offset_ms) {
  tb::TraceIteration it;
  it.workload = "tp-mlp";
  it.policy = "priority";
  it.rank = rank;
  it.spans = {{"L0.gemm", false, 0.0 + offset_ms, 1.5 + offset_ms, -1},
              {"L0.reduce-scatter", true, 1.5 + offset_ms, 2.25 + offset_ms, 0},
              {"L0.add", false, 2.25 + offset_ms, 2.5 + offset_ms, 1}};
  return it;
}

std::vector<json> events_of(const json& trace, const std::string& ph) {
  std::vector<json> out;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == ph) out.push_back(e);
  return out;
}

}  // namespace

TEST(Trace, OneCompleteEventPerOperationInMicroseconds) {
  tb::TraceIteration sequential = overlapped(0, 0);
  sequential.policy = "sequential";
  sequential.sequential = true;
  for (auto& s : sequential.spans) s.waits_for = -1;
  const json trace = tb::chrome_trace({overlapped(0, 0), overlapped(1, 0.125), sequential});

  const auto spans = events_of(trace, "X");
  ASSERT_EQ(spans.size(), 9u);
  // Rank 1's reduce-scatter: the communication thread of rank 1, 1.625 ms -> 1625 us, 750 us long.
  const json& rs = spans[4];
  EXPECT_EQ(rs["name"], "L0.reduce-scatter");
  EXPECT_EQ(rs["cat"], "collective");
  EXPECT_EQ(rs["pid"], 1);
  EXPECT_EQ(rs["tid"], 3);
  EXPECT_DOUBLE_EQ(rs["ts"].get<double>(), 1625.0);
  EXPECT_DOUBLE_EQ(rs["dur"].get<double>(), 750.0);
  EXPECT_EQ(rs["args"]["waits for"], "L0.gemm");
  EXPECT_EQ(rs["args"]["op"], 1);
  EXPECT_EQ(spans[5]["args"]["waits for"], "L0.reduce-scatter");
  EXPECT_FALSE(spans[3]["args"].contains("waits for"));
  // One stream in a sequential iteration: the collective runs on the compute thread, in a process
  // of its own.
  for (size_t i = 6; i < 9; ++i) {
    EXPECT_EQ(spans[i]["pid"], 2);
    EXPECT_EQ(spans[i]["tid"], 0);
  }

  std::map<std::pair<int, int>, std::string> threads;
  std::map<int, std::string> processes;
  for (const auto& m : events_of(trace, "M")) {
    if (m["name"] == "thread_name") threads[{m["pid"], m["tid"]}] = m["args"]["name"];
    if (m["name"] == "process_name") processes[m["pid"]] = m["args"]["name"];
  }
  EXPECT_EQ(processes, (std::map<int, std::string>{{1, "tp-mlp priority"}, {2, "tp-mlp sequential"}}));
  EXPECT_EQ(threads, (std::map<std::pair<int, int>, std::string>{{{1, 0}, "rank 0 compute"},
                                                                 {{1, 1}, "rank 0 communication"},
                                                                 {{1, 2}, "rank 1 compute"},
                                                                 {{1, 3}, "rank 1 communication"},
                                                                 {{2, 0}, "rank 0 (one stream)"}}));
  EXPECT_EQ(trace["displayTimeUnit"], "ms");
  EXPECT_EQ(tb::chrome_trace({}, {{"commit", "abc"}})["otherData"]["commit"], "abc");
}

TEST(Trace, InconsistentSpansAreRefused) {
  tb::TraceIteration backwards = overlapped(0, 0);
  backwards.spans[1].end_ms = 1.0;
  EXPECT_NE(error_of([&] { tb::chrome_trace({backwards}); }).find("'L0.reduce-scatter' ends before it starts"),
            std::string::npos);
  tb::TraceIteration dangling = overlapped(0, 0);
  dangling.spans[2].waits_for = 7;
  EXPECT_NE(error_of([&] { tb::chrome_trace({dangling}); }).find("'L0.add' waits for an operation that is not"),
            std::string::npos);
}

TEST(Trace, WritesTheFileOrSaysWhyNot) {
  const std::string path = ::testing::TempDir() + "/trace.json";
  tb::write_trace(path, {overlapped(0, 0)});
  std::ifstream in(path);
  // What the file holds, checked on its own terms (not against chrome_trace(), the code under test):
  // rank 0's three operations, in microseconds.
  const json file = json::parse(in);
  EXPECT_EQ(file["displayTimeUnit"], "ms");
  const auto spans = events_of(file, "X");
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0]["name"], "L0.gemm");
  EXPECT_DOUBLE_EQ(spans[0]["dur"].get<double>(), 1500.0);
  EXPECT_EQ(spans[1]["name"], "L0.reduce-scatter");
  EXPECT_DOUBLE_EQ(spans[1]["ts"].get<double>(), 1500.0);
  EXPECT_EQ(spans[2]["name"], "L0.add");
  EXPECT_DOUBLE_EQ(spans[2]["dur"].get<double>(), 250.0);
  const std::string bad = ::testing::TempDir() + "/no-such-dir/trace.json";
  const std::string why = error_of([&] { tb::write_trace(bad, {overlapped(0, 0)}); });
  EXPECT_NE(why.find("cannot write the trace to '" + bad + "'"), std::string::npos) << why;
  EXPECT_NE(why.find("trace.cpp:"), std::string::npos) << why;
}

// A microbenchmark step's spans in program order (harness/microbenchmark.h): `count` compute units,
// then the collective; nothing waits across streams.
std::vector<tb::TraceSpan> microbenchmark_spans(int count) {
  std::vector<tb::TraceSpan> spans(count + 1);
  for (int i = 0; i < count; ++i) spans[i].name = "gemm " + std::to_string(i + 1);
  spans[count].name = "all-reduce 256MiB";
  spans[count].collective = true;
  return spans;
}

// What a rank gathers from every rank (Coordinator::all_gather_series: [rank][starts, ends]) becomes
// one iteration per rank, each with its own times and the shared names.
TEST(Trace, EveryRankKeepsItsOwnTimes) {
  tb::TraceIteration mine;
  mine.workload = "gemm all-reduce 256MiB";
  mine.policy = "shape:3+priority";
  mine.rank = 1;
  mine.spans = microbenchmark_spans(1);
  mine.spans[0].end_ms = 2.0;
  mine.spans[1].end_ms = 3.0;
  EXPECT_EQ(tb::span_times(mine.spans), (std::vector<std::vector<double>>{{0.0, 0.0}, {2.0, 3.0}}));

  const std::vector<std::vector<std::vector<double>>> gathered = {{{0.0, 0.25}, {1.5, 3.5}},  // rank 0
                                                                  {{0.0, 0.0}, {2.0, 3.0}}};  // rank 1
  const auto all = tb::every_rank(mine, gathered);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].rank, 0);
  EXPECT_EQ(all[1].rank, 1);
  EXPECT_EQ(all[0].spans[1].name, "all-reduce 256MiB");
  EXPECT_TRUE(all[0].spans[1].collective);
  EXPECT_DOUBLE_EQ(all[0].spans[1].start_ms, 0.25);
  EXPECT_DOUBLE_EQ(all[0].spans[1].end_ms, 3.5);
  EXPECT_DOUBLE_EQ(all[0].spans[0].end_ms, 1.5);
  EXPECT_DOUBLE_EQ(all[1].spans[0].end_ms, 2.0);
  EXPECT_EQ(all[1].policy, "shape:3+priority");

  const std::vector<std::vector<std::vector<double>>> short_rank = {{{0.0, 0.25}, {1.5, 3.5}}, {{0.0}, {2.0}}};
  EXPECT_NE(error_of([&] {
              tb::every_rank(mine, short_rank);
            }).find("gemm all-reduce 256MiB: rank 1 traced a different program"),
            std::string::npos);
}

// Two ranks' steps under an overlapping policy and under sequential, as `tandem bench --workload
// gemm --trace` assembles them: compute units on each rank's compute track, the collective on its
// communication track; under sequential everything on the one stream.
TEST(Trace, MicrobenchmarkStepsBecomeTwoTracksPerRank) {
  std::vector<tb::TraceIteration> iterations;
  for (const bool sequential : {false, true}) {
    tb::TraceIteration mine;
    mine.workload = "gemm all-reduce 256MiB";
    mine.policy = sequential ? "sequential" : "priority";
    mine.sequential = sequential;
    mine.spans = microbenchmark_spans(2);
    const std::vector<std::vector<double>> times = {{0.0, 1.0, 0.0}, {1.0, 2.0, 1.75}};
    for (auto& it : tb::every_rank(mine, {times, times})) iterations.push_back(it);
  }
  const json trace = tb::chrome_trace(iterations);
  // pid 1: priority, pid 2: sequential; tid 2*rank (+1 for the communication stream).
  std::map<std::pair<int, int>, std::vector<std::string>> on_track;
  for (const auto& e : events_of(trace, "X")) on_track[{e["pid"], e["tid"]}].push_back(e["name"]);
  const std::vector<std::string> units = {"gemm 1", "gemm 2"}, collective = {"all-reduce 256MiB"},
                                 one_stream = {"gemm 1", "gemm 2", "all-reduce 256MiB"};
  EXPECT_EQ(on_track, (std::map<std::pair<int, int>, std::vector<std::string>>{{{1, 0}, units},
                                                                               {{1, 1}, collective},
                                                                               {{1, 2}, units},
                                                                               {{1, 3}, collective},
                                                                               {{2, 0}, one_stream},
                                                                               {{2, 2}, one_stream}}));
  std::map<int, std::string> processes;
  for (const auto& m : events_of(trace, "M"))
    if (m["name"] == "process_name") processes[m["pid"]] = m["args"]["name"];
  EXPECT_EQ(processes, (std::map<int, std::string>{{1, "gemm all-reduce 256MiB priority"},
                                                   {2, "gemm all-reduce 256MiB sequential"}}));
  // The collective: 0 -> 1.75 ms, in microseconds.
  for (const auto& e : events_of(trace, "X"))
    if (e["name"] == "all-reduce 256MiB" && e["pid"] == 1) EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 1750.0);
}
