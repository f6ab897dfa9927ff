#include "report/trace.h"

#include <map>
#include <utility>

#include "report/report.h"
#include "tandem/error.h"
#include "tandem/safe_file.h"

namespace tandem::bench {

std::vector<std::vector<double>> span_times(const std::vector<TraceSpan>& spans) {
  std::vector<double> starts, ends;
  for (const auto& s : spans) {
    starts.push_back(s.start_ms);
    ends.push_back(s.end_ms);
  }
  return {starts, ends};
}

std::vector<TraceIteration> every_rank(const TraceIteration& mine,
                                       const std::vector<std::vector<std::vector<double>>>& gathered) {
  std::vector<TraceIteration> out;
  for (size_t rank = 0; rank < gathered.size(); ++rank) {
    const auto& times = gathered[rank];
    TANDEM_REQUIRE(times.size() == 2 && times[0].size() == mine.spans.size() && times[1].size() == mine.spans.size(),
                   mine.workload + ": rank " + std::to_string(rank) + " traced a different program");
    TraceIteration it = mine;
    it.rank = static_cast<int>(rank);
    for (size_t i = 0; i < it.spans.size(); ++i) {
      it.spans[i].start_ms = times[0][i];
      it.spans[i].end_ms = times[1][i];
    }
    out.push_back(std::move(it));
  }
  return out;
}

nlohmann::json chrome_trace(const std::vector<TraceIteration>& iterations, const nlohmann::json& about) {
  nlohmann::json events = nlohmann::json::array();
  // A process per (workload, policy), numbered in order of first appearance so the viewer lists
  // them as they were measured.
  std::map<std::pair<std::string, std::string>, int> processes;
  for (const auto& it : iterations) {
    const auto key = std::make_pair(it.workload, it.policy);
    auto found = processes.find(key);
    if (found == processes.end()) {
      const int pid = static_cast<int>(processes.size()) + 1;
      found = processes.emplace(key, pid).first;
      events.push_back(
          {{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", it.workload + " " + it.policy}}}});
      events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
    }
    const int pid = found->second;
    // Two threads per rank: compute first, then communication.
    const auto tid = [&](bool collective) { return 2 * it.rank + (collective && !it.sequential ? 1 : 0); };
    for (bool collective : {false, true}) {
      if (collective && it.sequential) continue;
      const char* stream = it.sequential ? " (one stream)" : collective ? " communication" : " compute";
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", pid},
                        {"tid", tid(collective)},
                        {"args", {{"name", "rank " + std::to_string(it.rank) + stream}}}});
    }
    for (size_t index = 0; index < it.spans.size(); ++index) {
      const TraceSpan& span = it.spans[index];
      TANDEM_REQUIRE(span.end_ms >= span.start_ms, "trace span '" + span.name + "' ends before it starts");
      // The position in program order tells apart operations of the same name (a GEMM is named by
      // its linear and pass, the same in every layer).
      nlohmann::json args = {{"op", index}};
      if (span.waits_for >= 0) {
        TANDEM_REQUIRE(span.waits_for < static_cast<int>(it.spans.size()),
                       "trace span '" + span.name + "' waits for an operation that is not in the iteration");
        args["waits for"] = it.spans[span.waits_for].name;
      }
      events.push_back({{"ph", "X"},
                        {"name", span.name},
                        {"cat", span.collective ? "collective" : "compute"},
                        {"pid", pid},
                        {"tid", tid(span.collective)},
                        {"ts", span.start_ms * 1000.0},
                        {"dur", (span.end_ms - span.start_ms) * 1000.0},
                        {"args", args}});
    }
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}, {"otherData", about}};
}

void write_trace(const std::string& path, const std::vector<TraceIteration>& iterations, const nlohmann::json& about) {
  // Atomically, beside its destination (tandem/safe_file.h): a reader never sees half a trace, and a
  // link or another user's file planted at `path` in a shared folder is not written through.
  const std::string why = try_write_file_atomically(path, json_text(chrome_trace(iterations, about), -1) + "\n");
  TANDEM_REQUIRE(why.empty(), "cannot write the trace to '" + path + "' (" + why + ")");
}

}  // namespace tandem::bench
