#pragma once
// Timelines of measured iterations (`tandem bench --trace FILE`): when each operation of one
// training-scenario iteration, or of one microbenchmark step (its compute units and its collective),
// ran on each rank's compute and communication streams, under each policy, written as Chrome trace
// events (open the file in ui.perfetto.dev or chrome://tracing).
//
// Times come from CUDA events recorded on the stream that runs each operation, right before and
// right after it, in one extra iteration after the timed ones (the events themselves cost a few
// microseconds per operation, so the timeline is for seeing what waited on what, not for timing).
// Each rank's times count from that rank's own iteration start: ranks start together, after a
// barrier, but their clocks are not aligned to the microsecond.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tandem::bench {

struct TraceSpan {
  std::string name;         // the operation, e.g. "mb0.L1.reduce-scatter out"
  bool collective = false;  // ran on the communication stream (Sequential: every operation on compute)
  double start_ms = 0;      // from the iteration's start on this rank
  double end_ms = 0;
  int waits_for = -1;  // the operation of the other stream it had to wait for (program index), or -1
};

// One step of one case (a scenario's iteration, or a microbenchmark's compute units and collective)
// under one policy on one rank; spans in program order.
struct TraceIteration {
  std::string workload;  // the scenario, or the microbenchmark case ("gemm all-reduce 256MiB")
  std::string policy;
  int rank = 0;
  bool sequential = false;  // everything ran on the compute stream
  std::vector<TraceSpan> spans;
};

// This rank's span times as the series Coordinator::all_gather_series gathers: {starts, ends}.
std::vector<std::vector<double>> span_times(const std::vector<TraceSpan>& spans);
// Every rank's iteration: `mine` (names, streams and dependencies, the same on every rank) with
// each rank's times from `gathered` ([rank][starts, ends], as all_gather_series returns them), in
// rank order. Throws tandem::Error if a rank traced a different number of operations.
std::vector<TraceIteration> every_rank(const TraceIteration& mine,
                                       const std::vector<std::vector<std::vector<double>>>& gathered);

// Chrome trace event format: one process per (workload, policy), one thread per rank and stream,
// one complete event ("ph": "X", microseconds) per operation; its index in program order ("op")
// and the operation it waited for ("waits for") in args.
// `about` (the run: tool, commit, command, GPUs) goes into the trace's "otherData", which viewers
// show as the trace's metadata.
nlohmann::json chrome_trace(const std::vector<TraceIteration>& iterations,
                            const nlohmann::json& about = nlohmann::json::object());
// Writes chrome_trace(iterations, about) to `path` atomically, as valid UTF-8; throws tandem::Error
// naming the path if it cannot.
void write_trace(const std::string& path, const std::vector<TraceIteration>& iterations,
                 const nlohmann::json& about = nlohmann::json::object());

}  // namespace tandem::bench
