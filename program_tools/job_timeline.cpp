#include "program_tools/job_timeline.h"

#include <algorithm>
#include <map>

#include "report/report.h"
#include "tandem/shaping_check_json.h"

namespace tandem::program_tools {
namespace {

std::string ms_text(double ms) { return bench::format("%.3f ms", ms); }

std::string ranks_text(size_t n) { return std::to_string(n) + (n == 1 ? " rank" : " ranks"); }

// "rank 0 (pid 4711)", or "pid 4711" for a process without a rank.
std::string process_label(const ProcessTimeline& p) {
  return p.rank ? "rank " + std::to_string(*p.rank) + " (pid " + std::to_string(p.pid) + ")"
                : "pid " + std::to_string(p.pid);
}

double to_ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

}  // namespace

bool is_rank_of_job(const ProcessTimeline& p, const std::vector<ProcessTimeline>& processes) {
  const bool launched = std::any_of(processes.begin(), processes.end(), [](const auto& q) { return q.rank; });
  if (launched && !p.rank) return false;
  return std::none_of(processes.begin(), processes.end(), [&](const ProcessTimeline& q) {
    return p.parent_pid != 0 && q.pid == p.parent_pid && q.pid != p.pid && q.rank == p.rank;
  });
}

namespace {

// "pid 4712, a child of rank 0 (pid 4711)", or "pid 4712, no rank of the launcher".
std::string other_process_label(const ProcessTimeline& p, const std::vector<ProcessTimeline>& processes) {
  for (const ProcessTimeline& q : processes)
    if (p.parent_pid != 0 && q.pid == p.parent_pid)
      return "pid " + std::to_string(p.pid) + ", a child of " + process_label(q);
  return "pid " + std::to_string(p.pid) + ", no rank of the launcher";
}

}  // namespace

JobTimeline job_timeline(const std::vector<ProcessTimeline>& processes) {
  JobTimeline job;
  std::vector<RankFigures> ranks;
  for (const ProcessTimeline& p : processes) {
    if (!is_rank_of_job(p, processes)) {
      // Reported when it recorded, or tried to: a process without GPU work is nothing to mention.
      if (!p.devices.empty() || (p.state != TimelineState::NotStarted && p.state != TimelineState::Off))
        job.other_processes.push_back(other_process_label(p, processes));
      continue;
    }
    if (p.devices.empty()) {
      if (p.state != TimelineState::NotStarted && p.state != TimelineState::Off)
        job.missing.push_back(process_label(p) + ": " + to_string(p.state) + (p.reason.empty() ? "" : ": " + p.reason));
      continue;
    }
    if (job.units.empty()) {
      job.step_range = p.step_range;
      job.steps_from_nvtx = p.steps_from_ranges;
    }
    for (const DeviceTimeline& d : p.devices) {
      job.units.push_back(process_label(p) + " GPU " + std::to_string(d.device));
      job.shaping.push_back(d.shaping);
      ranks.push_back(d.figures);
    }
  }
  job.figures = job_figures(ranks);
  // Each process reports its losses once per device it drove; count them once per process.
  job.figures.records_lost = 0;
  for (const ProcessTimeline& p : processes)
    if (!p.devices.empty() && is_rank_of_job(p, processes)) job.figures.records_lost += p.records_lost();
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

nlohmann::json job_timeline_document(const std::vector<ProcessTimeline>& processes, const JobTimeline& job) {
  nlohmann::json list = nlohmann::json::array();
  for (const ProcessTimeline& p : processes)
    list.push_back({{"pid", p.pid},
                    {"rank", p.rank ? nlohmann::json(*p.rank) : nlohmann::json()},
                    {"host", p.host},
                    {"state", to_string(p.state)},
                    {"rank_of_job", is_rank_of_job(p, processes)},
                    {"reason", p.reason.empty() ? nlohmann::json() : nlohmann::json(p.reason)}});
  return {{"tool", "tandem run"}, {"job", job_timeline_json(job)}, {"processes", list}};
}

nlohmann::json job_trace_about(const std::vector<ProcessTimeline>& processes, const JobTimeline& job,
                               const std::string& step_range) {
  return {{"tool", "tandem run"},
          {"step_range", step_range},
          {"processes", processes.size()},
          {"job", job_timeline_json(job)}};
}

}  // namespace tandem::program_tools
