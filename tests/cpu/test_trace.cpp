// The Chrome trace tandem bench --trace writes: one process per (workload, policy), one thread per
// rank and stream, one complete event per operation, with the operation it waited for.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>

#include "error_of.h"
#include "harness/trace.h"

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
