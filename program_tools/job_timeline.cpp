#include "program_tools/job_timeline.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "report/report.h"
#include "tandem/error.h"
#include "tandem/safe_file.h"
#include "tandem/shaping_check_json.h"

namespace tandem::program_tools {
namespace {

namespace fs = std::filesystem;

// A process's timeline file holds one entry per step: a million steps stay far below this.
constexpr size_t kMaxTimelineFileBytes = size_t(1) << 30;

template <class T>
T required(const nlohmann::json& j, const char* key, const std::string& what) {
  TANDEM_REQUIRE(j.is_object() && j.contains(key) && !j.at(key).is_null(), what + " has no \"" + key + "\"");
  return j.at(key).get<T>();
}

StepFigures step_of(const nlohmann::json& j, const std::string& what) {
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

std::string ms_text(double ms) { return bench::format("%.3f ms", ms); }

std::string ranks_text(size_t n) { return std::to_string(n) + (n == 1 ? " rank" : " ranks"); }

// "rank 0 (pid 4711)", or "pid 4711" for a process without a rank.
std::string process_label(const ProcessTimelineFile& p) {
  return p.rank ? "rank " + std::to_string(*p.rank) + " (pid " + std::to_string(p.pid) + ")"
                : "pid " + std::to_string(p.pid);
}

void sort_by_rank(std::vector<ProcessTimelineFile>& processes) {
  std::stable_sort(processes.begin(), processes.end(), [](const ProcessTimelineFile& a, const ProcessTimelineFile& b) {
    if (a.rank != b.rank) return a.rank.value_or(-1) < b.rank.value_or(-1);
    return a.pid < b.pid;
  });
}

double to_ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

}  // namespace

std::vector<std::string> files_named(const std::string& folder, const std::string& prefix, const std::string& suffix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > prefix.size() + suffix.size() && name.rfind(prefix, 0) == 0 &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 && entry.is_regular_file(ec))
      out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

ProcessTimelineFile parse_process_timeline(const nlohmann::json& doc) {
  const std::string what = "a timeline document";
  TANDEM_REQUIRE(doc.is_object(), what + " is not a JSON object");
  ProcessTimelineFile p;
  p.pid = required<long>(doc, "pid", what);
  if (doc.contains("parent_pid") && doc.at("parent_pid").is_number_integer())
    p.parent_pid = doc.at("parent_pid").get<long>();
  if (doc.contains("rank") && doc.at("rank").is_number_integer()) p.rank = doc.at("rank").get<int>();
  p.host = doc.value("host", std::string());
  p.state = required<std::string>(doc, "state", what);
  if (doc.contains("reason") && doc.at("reason").is_string()) p.reason = doc.at("reason").get<std::string>();
  if (doc.contains("step_range") && doc.at("step_range").is_string())
    p.step_range = doc.at("step_range").get<std::string>();
  p.steps_from_nvtx = doc.value("steps_from", std::string()) == "nvtx";
  if (doc.contains("lost") && doc.at("lost").is_object()) p.lost = doc.at("lost").value("total", uint64_t(0));
  if (doc.contains("devices")) {
    for (const nlohmann::json& d : doc.at("devices")) {
      const std::string device_what = what + "'s device";
      RankFigures figures;
      for (const nlohmann::json& s : required<nlohmann::json>(d, "steps", device_what))
        figures.steps.push_back(step_of(s, device_what + " step"));
      figures.records_lost = p.lost;
      if (d.contains("records") && d.at("records").is_object())
        figures.outside_steps = d.at("records").value("outside_steps", uint64_t(0));
      const auto device = required<uint32_t>(d, "device", device_what);
      if (d.contains("shaping") && !d.at("shaping").is_null()) {
        try {
          p.shaping[device] = shaping_check_from_json(d.at("shaping"));
        } catch (const nlohmann::json::exception& e) {
          TANDEM_THROW(device_what + " has a malformed \"shaping\": " + e.what());
        }
      }
      p.devices.emplace_back(device, std::move(figures));
    }
  }
  return p;
}

std::vector<ProcessTimelineFile> read_timeline_folder(const std::string& folder) {
  std::vector<ProcessTimelineFile> out;
  for (const std::string& file : files_named(folder, "timeline-", ".json")) {
    try {
      out.push_back(
          parse_process_timeline(nlohmann::json::parse(read_small_regular_file(file, kMaxTimelineFileBytes))));
    } catch (const std::exception& e) {
      TANDEM_THROW("cannot read the timeline file " + file + ": " + e.what());
    }
  }
  sort_by_rank(out);
  return out;
}

std::vector<ProcessTimelineFile> read_timelines_from_stats(const std::vector<std::string>& stats_files) {
  std::vector<ProcessTimelineFile> out;
  for (const std::string& file : stats_files) {
    nlohmann::json stats;
    try {
      stats = nlohmann::json::parse(read_small_regular_file(file, kMaxTimelineFileBytes));
      if (!stats.contains("timeline") || stats.at("timeline").is_null()) continue;
      out.push_back(parse_process_timeline(stats.at("timeline")));
    } catch (const std::exception& e) {
      TANDEM_THROW("cannot read the timeline of the stats file " + file + ": " + e.what());
    }
  }
  sort_by_rank(out);
  return out;
}

bool is_rank_of_job(const ProcessTimelineFile& p, const std::vector<ProcessTimelineFile>& processes) {
  const bool launched = std::any_of(processes.begin(), processes.end(), [](const auto& q) { return q.rank; });
  if (launched && !p.rank) return false;
  return std::none_of(processes.begin(), processes.end(), [&](const ProcessTimelineFile& q) {
    return p.parent_pid != 0 && q.pid == p.parent_pid && q.pid != p.pid && q.rank == p.rank;
  });
}

namespace {

// "pid 4712, a child of rank 0 (pid 4711)", or "pid 4712, no rank of the launcher".
std::string other_process_label(const ProcessTimelineFile& p, const std::vector<ProcessTimelineFile>& processes) {
  for (const ProcessTimelineFile& q : processes)
    if (p.parent_pid != 0 && q.pid == p.parent_pid)
      return "pid " + std::to_string(p.pid) + ", a child of " + process_label(q);
  return "pid " + std::to_string(p.pid) + ", no rank of the launcher";
}

}  // namespace

JobTimeline job_timeline(const std::vector<ProcessTimelineFile>& processes) {
  JobTimeline job;
  std::vector<RankFigures> ranks;
  for (const ProcessTimelineFile& p : processes) {
    if (!is_rank_of_job(p, processes)) {
      // Reported when it recorded, or tried to: a process without GPU work is nothing to mention.
      if (!p.devices.empty() || (p.state != "not-started" && p.state != "off"))
        job.other_processes.push_back(other_process_label(p, processes));
      continue;
    }
    if (p.devices.empty()) {
      if (p.state != "not-started" && p.state != "off")
        job.missing.push_back(process_label(p) + ": " + p.state + (p.reason.empty() ? "" : ": " + p.reason));
      continue;
    }
    if (job.units.empty()) {
      job.step_range = p.step_range;
      job.steps_from_nvtx = p.steps_from_nvtx;
    }
    for (const auto& [device, figures] : p.devices) {
      job.units.push_back(process_label(p) + " GPU " + std::to_string(device));
      const auto shaping = p.shaping.find(device);
      job.shaping.push_back(shaping == p.shaping.end() ? std::nullopt : std::optional<ShapingCheck>(shaping->second));
      ranks.push_back(figures);
    }
  }
  job.figures = job_figures(ranks);
  // Each process reports its losses once per device it drove; count them once per process.
  job.figures.records_lost = 0;
  for (const ProcessTimelineFile& p : processes)
    if (!p.devices.empty() && is_rank_of_job(p, processes)) job.figures.records_lost += p.lost;
  return job;
}

std::optional<JobSummary> summarize_job(const JobTimeline& job) {
  const auto& steps = job.figures.steps;
  if (steps.empty()) return std::nullopt;
  JobSummary s;
  s.steps = steps.size();
  // Each figure of the summary: the median over the steps of the slowest rank's.
  const std::pair<int64_t StepFigures::*, double JobSummary::*> figures[] = {
      {&StepFigures::step_ns, &JobSummary::step_ms},
      {&StepFigures::computation_ns, &JobSummary::computation_ms},
      {&StepFigures::communication_ns, &JobSummary::communication_ms},
      {&StepFigures::overlapped_ns, &JobSummary::overlapped_ms},
      {&StepFigures::exposed_communication_ns, &JobSummary::exposed_communication_ms},
      {&StepFigures::idle_ns, &JobSummary::idle_ms}};
  for (const auto& [ns, ms] : figures) {
    std::vector<double> values;
    for (const JobStep& j : steps) values.push_back(to_ms(j.slowest.*ns));
    s.*ms = median_of(values);
  }
  int64_t comm_sum = 0, both_sum = 0;
  std::map<size_t, size_t> slowest_count;
  for (const JobStep& j : steps) {
    comm_sum += j.slowest.communication_ns;
    both_sum += j.slowest.overlapped_ns;
    ++slowest_count[j.slowest_rank];
  }
  if (comm_sum > 0) s.hidden_share = static_cast<double>(both_sum) / static_cast<double>(comm_sum);
  for (const auto& [unit, count] : slowest_count)
    if (count > s.slowest_unit_steps) s.slowest_unit = unit, s.slowest_unit_steps = count;
  return s;
}

std::string job_timeline_text(const JobTimeline& job) {
  std::string out;
  const std::string head = "tandem run: job timeline: ";
  const auto summary = summarize_job(job);
  if (job.units.empty()) {
    out += head + "no process recorded a timeline\n";
  } else if (!summary) {
    out += head + ranks_text(job.units.size()) + " but no step common to all of them\n";
  } else {
    std::string steps = std::to_string(summary->steps) + (summary->steps == 1 ? " step" : " steps");
    steps += job.steps_from_nvtx ? " '" + job.step_range + "' (NVTX ranges)" : " (the whole run)";
    out += head + ranks_text(job.units.size()) + ", " + steps + "; the slowest rank's step, median " +
           ms_text(summary->step_ms) + " (" + job.units[summary->slowest_unit] + " slowest in " +
           std::to_string(summary->slowest_unit_steps) + " of " + std::to_string(summary->steps) + "): computation " +
           ms_text(summary->computation_ms) + ", communication " + ms_text(summary->communication_ms) +
           ", overlapped " + ms_text(summary->overlapped_ms) + ", exposed communication " +
           ms_text(summary->exposed_communication_ms) + ", idle " + ms_text(summary->idle_ms) + "; " +
           (summary->hidden_share
                ? bench::format("%.1f %%", 100.0 * *summary->hidden_share) + " of the communication hidden"
                : std::string("no communication")) +
           "\n";
  }
  for (size_t i = 0; i < job.shaping.size(); ++i)
    if (job.shaping[i]) out += head + job.units[i] + ": " + shaping_check_text(*job.shaping[i]) + "\n";
  if (job.figures.steps_left_out)
    out += head + std::to_string(job.figures.steps_left_out) +
           " steps left out: not every rank has them (ranks with more steps than others)\n";
  for (const std::string& m : job.missing) out += head + "not recorded in " + m + "\n";
  for (const std::string& o : job.other_processes)
    out += head + "not a rank of the job: " + o + " (its GPU work is left out of the ranks' figures)\n";
  if (job.figures.records_lost)
    out += head + std::to_string(job.figures.records_lost) +
           " activity records lost over the ranks: the busy figures may be low\n";
  return out;
}

nlohmann::json job_timeline_json(const JobTimeline& job) {
  nlohmann::json steps = nlohmann::json::array();
  for (const JobStep& s : job.figures.steps) {
    const StepFigures& f = s.slowest;
    steps.push_back({{"index", s.index},
                     {"slowest", job.units[s.slowest_rank]},
                     {"span_start_ns", s.span_start_ns},
                     {"span_end_ns", s.span_end_ns},
                     {"step_ns", f.step_ns},
                     {"computation_ns", f.computation_ns},
                     {"communication_ns", f.communication_ns},
                     {"overlapped_ns", f.overlapped_ns},
                     {"exposed_communication_ns", f.exposed_communication_ns},
                     {"idle_ns", f.idle_ns},
                     {"hidden_share", f.hidden_share() ? nlohmann::json(*f.hidden_share()) : nlohmann::json()}});
  }
  nlohmann::json summary;
  if (const auto s = summarize_job(job))
    summary = {{"steps", s->steps},
               {"step_ms", s->step_ms},
               {"computation_ms", s->computation_ms},
               {"communication_ms", s->communication_ms},
               {"overlapped_ms", s->overlapped_ms},
               {"exposed_communication_ms", s->exposed_communication_ms},
               {"idle_ms", s->idle_ms},
               {"hidden_share", s->hidden_share ? nlohmann::json(*s->hidden_share) : nlohmann::json()},
               {"slowest_most_often", job.units[s->slowest_unit]}};
  nlohmann::json shaping = nlohmann::json::array();
  for (size_t i = 0; i < job.shaping.size(); ++i)
    if (job.shaping[i]) {
      nlohmann::json unit = shaping_check_json(*job.shaping[i]);
      unit["unit"] = job.units[i];
      shaping.push_back(unit);
    }
  return {{"ranks", job.units.size()},
          {"units", job.units},
          {"shaping", shaping},
          {"step_range", job.step_range.empty() ? nlohmann::json() : nlohmann::json(job.step_range)},
          {"steps_from", job.steps_from_nvtx ? "nvtx" : "run"},
          {"steps", steps},
          {"summary", summary},
          {"steps_left_out", job.figures.steps_left_out},
          {"records_lost", job.figures.records_lost},
          {"not_recorded", job.missing},
          {"other_processes", job.other_processes}};
}

size_t assemble_trace(const std::string& folder, const std::string& path, const nlohmann::json& about) {
  const std::vector<std::string> parts = files_named(folder, "trace-", ".jsonl");
  // The job's clock starts at the earliest event of any process (each part's header says its own).
  int64_t base = 0;
  bool any = false;
  for (const std::string& part : parts) {
    std::ifstream in(part);
    std::string header;
    TANDEM_REQUIRE(in && std::getline(in, header), "cannot read the trace events " + part);
    const nlohmann::json h = nlohmann::json::parse(header, nullptr, false);
    TANDEM_REQUIRE(h.is_object() && h.contains("first_ns"), part + " does not start with a trace header");
    const int64_t first = h.at("first_ns").get<int64_t>();
    base = any ? std::min(base, first) : first;
    any = true;
  }
  size_t events = 0;
  const std::string why = try_write_file_atomically(path, [&](const ContentSink& sink) {
    sink("{\"traceEvents\":[\n");
    for (const std::string& part : parts) {
      std::ifstream in(part);
      std::string line;
      std::getline(in, line);  // the header
      while (std::getline(in, line)) {
        if (line.empty()) continue;
        nlohmann::json e = nlohmann::json::parse(line, nullptr, false);
        TANDEM_REQUIRE(e.is_object(), "a line of " + part + " is not a JSON object");
        if (e.contains("ts_ns")) {
          e["ts"] = static_cast<double>(e.at("ts_ns").get<int64_t>() - base) / 1e3;
          e.erase("ts_ns");
        }
        if (e.contains("dur_ns")) {
          e["dur"] = static_cast<double>(e.at("dur_ns").get<int64_t>()) / 1e3;
          e.erase("dur_ns");
        }
        if (!sink((events ? ",\n" : "") + e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))) return;
        ++events;
      }
    }
    nlohmann::json other = about;
    other["clock_origin_ns"] = base;
    sink("\n],\"displayTimeUnit\":\"ms\",\"otherData\":" +
         other.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "}\n");
  });
  TANDEM_REQUIRE(why.empty(), "cannot write the trace: " + why);
  return events;
}

}  // namespace tandem::program_tools
