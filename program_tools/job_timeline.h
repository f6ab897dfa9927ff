#pragma once
// A program's job put together from the timelines its processes wrote at exit (timeline_files.h):
// which processes are its ranks, each step's slowest rank (tandem/overlap.h, job_figures), the job's
// line and JSON, and the figure `tandem tune --objective` ranks by.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tandem/overlap.h"
#include "tandem/process_timeline.h"
#include "tandem/shaping_check.h"

namespace tandem::program_tools {

// A process is a rank of the job only when the launcher says so: it carries a launcher's rank (in a
// job where no process does, none needs to), and its parent is not a process of the job with that
// same rank (a helper a rank forks and executes inherits the rank's variables, and is no rank).
bool is_rank_of_job(const ProcessTimeline& p, const std::vector<ProcessTimeline>& processes);

struct JobTimeline {
  JobFigures figures;                                // over every recorded (rank, device), in the files' order
  std::vector<std::string> units;                    // "rank 0 (pid 4711) GPU 0", one per figures' rank index
  std::vector<std::optional<ShapingCheck>> shaping;  // per unit, under a shape policy
  std::vector<std::string> missing;                  // ranks that recorded nothing, with why
  // Processes that are no rank of the job (is_rank_of_job), with what they are: left out of the figures.
  std::vector<std::string> other_processes;
  std::string step_range;
  bool steps_from_nvtx = false;
};
JobTimeline job_timeline(const std::vector<ProcessTimeline>& processes);

// The job's figures over its steps: the median of each figure of the slowest rank's step, and the
// share hidden over all of them (Σ overlapped / Σ communication). None without steps.
struct JobSummary {
  size_t steps = 0;
  double step_ms = 0, computation_ms = 0, communication_ms = 0, overlapped_ms = 0, exposed_communication_ms = 0,
         idle_ms = 0;
  std::optional<double> hidden_share;
  size_t slowest_unit = 0;        // the unit most often slowest
  size_t slowest_unit_steps = 0;  // in how many steps
};
std::optional<JobSummary> summarize_job(const JobTimeline& job);

// "tandem run: ..." lines for the job: its summary, each unit's shaping check, the processes that
// recorded nothing, losses.
std::string job_timeline_text(const JobTimeline& job);
nlohmann::json job_timeline_json(const JobTimeline& job);

// `tandem run --timeline-json`'s document (docs/BENCH_JSON.md): the job, and each process that wrote
// a timeline with whether it is a rank of the job.
nlohmann::json job_timeline_document(const std::vector<ProcessTimeline>& processes, const JobTimeline& job);
// The "otherData" of the job's Chrome trace (trace_assembly.h): the tool, the steps, the job.
nlohmann::json job_trace_about(const std::vector<ProcessTimeline>& processes, const JobTimeline& job,
                               const std::string& step_range);

}  // namespace tandem::program_tools
