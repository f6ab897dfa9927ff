#pragma once
// What `tandem tune -- CMD --objective O` ranks the candidates by: the program's wall time, a number
// it prints (--metric), or a figure of its timeline (`tandem run --timeline`, docs/RUN.md): the
// slowest rank's step time, or its exposed communication, each the median over the steps. A timeline
// objective measures every run, the baseline included, through `tandem run --timeline` (the baseline
// under `concurrent`, which applies no control), and reads the figure back from the runs' --stats
// files (job_timeline.h).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::program_tools {

enum class ObjectiveKind { Wall, Metric, StepTime, ExposedCommunication };

// "wall", "metric", "step-time", "exposed-comm".
std::optional<ObjectiveKind> parse_objective(std::string_view text);
const char* to_string(ObjectiveKind kind);
inline bool from_timeline(ObjectiveKind kind) {
  return kind == ObjectiveKind::StepTime || kind == ObjectiveKind::ExposedCommunication;
}
// "the slowest rank's step time (median over the steps, ms, from tandem run --timeline)"...
std::string describe(ObjectiveKind kind, const std::string& step_range);

// The `tandem run` options that make a run record what a timeline objective reads: --timeline, the
// stats files ("<prefix>%p.json"), the steps.
std::vector<std::string> timeline_run_options(const std::string& stats_prefix, const std::string& step_range);

// The objective's value (ms) from the stats files a run wrote ("<prefix><pid>.json"), or why there is
// none (no process recorded a timeline, no step common to the ranks, ...).
struct ObjectiveReading {
  std::optional<double> value;
  std::string failure;
};
ObjectiveReading read_timeline_objective(ObjectiveKind kind, const std::string& stats_prefix);

}  // namespace tandem::program_tools
