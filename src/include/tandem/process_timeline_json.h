#pragma once
// The timeline's files, one schema for the interposer, which writes them at a process's exit
// (preload/timeline_session.cpp), and the program tools, which read them back once the program has ended
// (program_tools/job_timeline.h, trace_assembly.h):
//   timeline-<pid>.json   the ProcessTimeline's JSON (docs/BENCH_JSON.md; the same object is the
//                         "timeline" member of `tandem run --stats`)
//   trace-<pid>.jsonl     with --trace, the process's Chrome trace events, one JSON object a line,
//                         after a header line that gives the process's earliest time
// Each field is named once, here, for the writer and the reader alike; the reader refuses a document
// without a required field by name. Header-only: tandem::core carries no JSON library.
#include <nlohmann/json.hpp>
#include <string>

#include "tandem/error.h"
#include "tandem/process_timeline.h"
#include "tandem/shaping_check_json.h"

namespace tandem {

// The files' names in the timeline folder (TANDEM_TIMELINE_DIR).
inline constexpr const char* kTimelineFilePrefix = "timeline-";
inline constexpr const char* kTimelineFileSuffix = ".json";
inline constexpr const char* kTracePartPrefix = "trace-";
inline constexpr const char* kTracePartSuffix = ".jsonl";
inline std::string timeline_file_name(long pid) {
  return kTimelineFilePrefix + std::to_string(pid) + kTimelineFileSuffix;
}
inline std::string trace_part_name(long pid) { return kTracePartPrefix + std::to_string(pid) + kTracePartSuffix; }

namespace timeline_json_detail {

inline nlohmann::json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}
inline nlohmann::json optional_text(const std::string& s) { return s.empty() ? nlohmann::json() : nlohmann::json(s); }

template <class T>
T required(const nlohmann::json& j, const char* key, const std::string& what) {
  TANDEM_REQUIRE(j.is_object() && j.contains(key) && !j.at(key).is_null(), what + " has no \"" + key + "\"");
  return j.at(key).get<T>();
}

inline bool has_integer(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j.at(key).is_number_integer();
}

inline bool has_text(const nlohmann::json& j, const char* key) { return j.contains(key) && j.at(key).is_string(); }

}  // namespace timeline_json_detail

// One step's figures (also the arguments of a step's slice in the trace).
inline nlohmann::json step_figures_json(const StepFigures& s) {
  return {{"name", s.name},
          {"start_ns", s.start_ns},
          {"end_ns", s.end_ns},
          {"step_ns", s.step_ns},
          {"computation_ns", s.computation_ns},
          {"communication_ns", s.communication_ns},
          {"overlapped_ns", s.overlapped_ns},
          {"exposed_communication_ns", s.exposed_communication_ns},
          {"idle_ns", s.idle_ns},
          {"hidden_share", timeline_json_detail::optional_json(s.hidden_share())},
          {"activities", s.activities}};
}

// Throws tandem::Error naming `what` and the missing figure.
inline StepFigures step_figures_from_json(const nlohmann::json& j, const std::string& what) {
  using timeline_json_detail::required;
  StepFigures s;
  s.name = j.value("name", std::string());
  s.start_ns = required<int64_t>(j, "start_ns", what);
  s.end_ns = required<int64_t>(j, "end_ns", what);
  s.step_ns = required<int64_t>(j, "step_ns", what);
  s.computation_ns = required<int64_t>(j, "computation_ns", what);
  s.communication_ns = required<int64_t>(j, "communication_ns", what);
  s.overlapped_ns = required<int64_t>(j, "overlapped_ns", what);
  s.exposed_communication_ns = required<int64_t>(j, "exposed_communication_ns", what);
  s.idle_ns = required<int64_t>(j, "idle_ns", what);
  s.activities = j.value("activities", uint64_t(0));
  return s;
}

// The medians over the steps: what a reader that does not sum steps itself shows (written, not read back).
inline nlohmann::json step_medians_json(const std::vector<StepFigures>& steps) {
  return {{"step_ns", median_ns(steps, &StepFigures::step_ns)},
          {"computation_ns", median_ns(steps, &StepFigures::computation_ns)},
          {"communication_ns", median_ns(steps, &StepFigures::communication_ns)},
          {"overlapped_ns", median_ns(steps, &StepFigures::overlapped_ns)},
          {"exposed_communication_ns", median_ns(steps, &StepFigures::exposed_communication_ns)},
          {"idle_ns", median_ns(steps, &StepFigures::idle_ns)}};
}

inline nlohmann::json process_timeline_json(const ProcessTimeline& t) {
  using timeline_json_detail::optional_json;
  using timeline_json_detail::optional_text;
  nlohmann::json devices = nlohmann::json::array();
  for (const DeviceTimeline& d : t.devices) {
    nlohmann::json steps = nlohmann::json::array();
    for (const StepFigures& s : d.figures.steps) steps.push_back(step_figures_json(s));
    const StepFigures sum = d.figures.total();
    nlohmann::json total = step_figures_json(sum);
    total.erase("name");
    devices.push_back({{"device", d.device},
                       {"steps", steps},
                       {"median", step_medians_json(d.figures.steps)},
                       {"total", total},
                       // Σ overlapped / Σ communication over the steps.
                       {"hidden_share", optional_json(sum.hidden_share())},
                       {"records",
                        {{"kernels", d.kernels},
                         {"copies", d.copies},
                         {"memsets", d.memsets},
                         {"communication", d.communication},
                         {"outside_steps", d.figures.outside_steps}}},
                       {"shaping", d.shaping ? shaping_check_json(*d.shaping) : nlohmann::json()}});
  }
  return {{"state", to_string(t.state)},
          {"reason", optional_text(t.reason)},
          {"recorded_until_ns", t.recorded_until_ns ? nlohmann::json(*t.recorded_until_ns) : nlohmann::json()},
          {"pid", t.pid},
          {"parent_pid", t.parent_pid ? nlohmann::json(t.parent_pid) : nlohmann::json()},
          {"rank", t.rank ? nlohmann::json(*t.rank) : nlohmann::json()},
          {"host", t.host},
          {"clock", "CLOCK_REALTIME ns (CUPTI's)"},
          {"step_range", optional_text(t.step_range)},
          {"steps_from", t.steps_from_ranges ? "nvtx" : "run"},
          {"devices", devices},
          {"lost",
           {{"total", t.records_lost()},
            {"dropped", t.lost.dropped},
            {"incomplete", t.lost.incomplete},
            {"over_limit", t.lost.over_limit}}},
          {"open_steps", t.open_steps},
          {"unplaced_steps", t.unplaced_steps}};
}

// The document as process_timeline_json wrote it. Optional fields a file may lack read as their
// defaults; a missing identity, state, device or step figure throws tandem::Error naming it, as does a
// state that is not one of TimelineState's or a malformed "shaping".
inline ProcessTimeline process_timeline_from_json(const nlohmann::json& doc) {
  using timeline_json_detail::has_integer;
  using timeline_json_detail::has_text;
  using timeline_json_detail::required;
  const std::string what = "a timeline document";
  TANDEM_REQUIRE(doc.is_object(), what + " is not a JSON object");
  ProcessTimeline p;
  p.pid = required<long>(doc, "pid", what);
  if (has_integer(doc, "parent_pid")) p.parent_pid = doc.at("parent_pid").get<long>();
  if (has_integer(doc, "rank")) p.rank = doc.at("rank").get<int>();
  p.host = doc.value("host", std::string());
  const std::string state = required<std::string>(doc, "state", what);
  const auto parsed = parse_timeline_state(state);
  TANDEM_REQUIRE(parsed.has_value(), what + " has an unknown \"state\": " + state);
  p.state = *parsed;
  if (has_text(doc, "reason")) p.reason = doc.at("reason").get<std::string>();
  if (has_integer(doc, "recorded_until_ns")) p.recorded_until_ns = doc.at("recorded_until_ns").get<int64_t>();
  if (has_text(doc, "step_range")) p.step_range = doc.at("step_range").get<std::string>();
  p.steps_from_ranges = doc.value("steps_from", std::string()) == "nvtx";
  if (doc.contains("lost") && doc.at("lost").is_object()) {
    const nlohmann::json& lost = doc.at("lost");
    p.lost.dropped = lost.value("dropped", uint64_t(0));
    p.lost.incomplete = lost.value("incomplete", uint64_t(0));
    p.lost.over_limit = lost.value("over_limit", uint64_t(0));
  }
  p.open_steps = doc.value("open_steps", uint64_t(0));
  p.unplaced_steps = doc.value("unplaced_steps", uint64_t(0));
  if (!doc.contains("devices")) return p;
  for (const nlohmann::json& d : doc.at("devices")) {
    const std::string device_what = what + "'s device";
    DeviceTimeline device;
    for (const nlohmann::json& s : required<nlohmann::json>(d, "steps", device_what))
      device.figures.steps.push_back(step_figures_from_json(s, device_what + " step"));
    // As the interposer gave them: the process's losses bound every device's figures.
    device.figures.records_lost = p.records_lost();
    if (d.contains("records") && d.at("records").is_object()) {
      const nlohmann::json& records = d.at("records");
      device.kernels = records.value("kernels", uint64_t(0));
      device.copies = records.value("copies", uint64_t(0));
      device.memsets = records.value("memsets", uint64_t(0));
      device.communication = records.value("communication", uint64_t(0));
      device.figures.outside_steps = records.value("outside_steps", uint64_t(0));
    }
    device.device = required<uint32_t>(d, "device", device_what);
    if (d.contains("shaping") && !d.at("shaping").is_null()) {
      try {
        device.shaping = shaping_check_from_json(d.at("shaping"));
      } catch (const nlohmann::json::exception& e) {
        TANDEM_THROW(device_what + " has a malformed \"shaping\": " + e.what());
      }
    }
    p.devices.push_back(std::move(device));
  }
  return p;
}

// A trace part's first line: its process and the earliest time of its events, from which the
// assembler finds the job's first. Every event after it carries its times in absolute nanoseconds,
// "ts_ns" and "dur_ns", which the assembler turns into Chrome's "ts" and "dur" (microseconds) on the
// job's clock.
inline constexpr const char* kTraceStartKey = "ts_ns";
inline constexpr const char* kTraceDurationKey = "dur_ns";
inline nlohmann::json trace_part_header_json(long pid, int64_t first_ns) {
  return {{"tandem_trace_part", 1}, {"pid", pid}, {"first_ns", first_ns}};
}
// The header's earliest time; throws tandem::Error naming `part` when the line is not a header.
inline int64_t trace_part_first_ns(const nlohmann::json& header, const std::string& part) {
  TANDEM_REQUIRE(header.is_object() && header.contains("first_ns") && header.at("first_ns").is_number(),
                 part + " does not start with a trace header");
  return header.at("first_ns").get<int64_t>();
}

}  // namespace tandem
