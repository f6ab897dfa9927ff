#include "program_tools/program_objective.h"

#include <filesystem>

#include "program_tools/job_timeline.h"
#include "program_tools/timeline_files.h"

namespace tandem::program_tools {
namespace {

namespace fs = std::filesystem;

constexpr std::pair<ObjectiveKind, const char*> kNames[] = {{ObjectiveKind::Wall, "wall"},
                                                            {ObjectiveKind::Metric, "metric"},
                                                            {ObjectiveKind::StepTime, "step-time"},
                                                            {ObjectiveKind::ExposedCommunication, "exposed-comm"}};

}  // namespace

std::optional<ObjectiveKind> parse_objective(std::string_view text) {
  for (const auto& [kind, name] : kNames)
    if (text == name) return kind;
  return std::nullopt;
}

const char* to_string(ObjectiveKind kind) {
  for (const auto& [k, name] : kNames)
    if (k == kind) return name;
  return "wall";
}

std::string describe(ObjectiveKind kind, const std::string& step_range) {
  const std::string steps = step_range.empty() ? "the whole run as one step" : "steps '" + step_range + "'";
  switch (kind) {
    case ObjectiveKind::StepTime:
      return "the slowest rank's step time (ms, median over " + steps + "; tandem run --timeline), lower is better";
    case ObjectiveKind::ExposedCommunication:
      return "the slowest rank's exposed communication (ms, median over " + steps +
             "; tandem run --timeline), lower is better";
    default:
      return to_string(kind);
  }
}

std::vector<std::string> timeline_run_options(const std::string& stats_prefix, const std::string& step_range) {
  std::vector<std::string> args = {"--timeline", "--stats", stats_prefix + "%p.json"};
  if (!step_range.empty()) args.insert(args.end(), {"--step-range", step_range});
  return args;
}

ObjectiveReading read_timeline_objective(ObjectiveKind kind, const std::string& stats_prefix) {
  ObjectiveReading r;
  const fs::path prefix(stats_prefix);
  try {
    const JobTimeline job = job_timeline(
        read_timelines_from_stats(files_named(prefix.parent_path().string(), prefix.filename().string(), ".json")));
    const auto summary = summarize_job(job);
    if (!summary) {
      r.failure = job.units.empty() ? "no process recorded a timeline" +
                                          (job.missing.empty() ? std::string() : " (" + job.missing[0] + ")")
                                    : "no step common to the ranks' timelines";
      return r;
    }
    r.value = kind == ObjectiveKind::StepTime ? summary->step_ms : summary->exposed_communication_ms;
  } catch (const std::exception& e) {
    r.failure = e.what();
  }
  return r;
}

}  // namespace tandem::program_tools
