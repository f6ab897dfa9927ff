#pragma once
// A program's timeline read back after it ran: the figures each of its processes wrote at exit
// (`tandem run --timeline`: one file per process in the run's timeline folder, and the "timeline"
// member of each --stats file; docs/BENCH_JSON.md), put together for the job: each step's slowest
// rank (tandem/overlap.h, job_figures), the job's line, the figure `tandem tune --objective` ranks
// by, and the Chrome trace assembled from every process's events.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tandem/overlap.h"
#include "tandem/shaping_check.h"

namespace tandem::program_tools {

// One process's timeline as written by the interposer (preload/timeline_records.h, timeline_json).
struct ProcessTimelineFile {
  long pid = 0;
  long parent_pid = 0;      // 0: not known (a file of an older tandem)
  std::optional<int> rank;  // the launcher's (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID...)
  std::string host;
  std::string state;   // recorded, stepped-aside, failed, not-started, off
  std::string reason;  // why it was not recorded, or stopped early
  std::string step_range;
  bool steps_from_nvtx = false;
  std::vector<std::pair<uint32_t, RankFigures>> devices;  // device id, its figures
  std::map<uint32_t, ShapingCheck> shaping;               // by device id, under a shape policy
  uint64_t lost = 0;
};

// The regular files of `folder` whose names are `prefix`, something, then `suffix`, sorted.
std::vector<std::string> files_named(const std::string& folder, const std::string& prefix, const std::string& suffix);
// Throws tandem::Error naming what is missing in a malformed document.
ProcessTimelineFile parse_process_timeline(const nlohmann::json& doc);
// Every timeline-<pid>.json in `folder`, by rank then pid. A file that does not parse throws
// tandem::Error naming it.
std::vector<ProcessTimelineFile> read_timeline_folder(const std::string& folder);
// The "timeline" member of each stats file (`tandem run --stats`); files without one are skipped.
std::vector<ProcessTimelineFile> read_timelines_from_stats(const std::vector<std::string>& stats_files);

// A process is a rank of the job only when the launcher says so: it carries a launcher's rank (in a
// job where no process does, none needs to), and its parent is not a process of the job with that
// same rank (a helper a rank forks and executes inherits the rank's variables, and is no rank).
bool is_rank_of_job(const ProcessTimelineFile& p, const std::vector<ProcessTimelineFile>& processes);

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
JobTimeline job_timeline(const std::vector<ProcessTimelineFile>& processes);

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

// The Chrome trace (chrome://tracing, ui.perfetto.dev) of every trace-<pid>.jsonl in `folder`:
// their events, times put on the job's clock (microseconds from the earliest event of any process),
// `about` as "otherData". Written atomically; throws tandem::Error naming `path` or a bad part.
// Returns the number of events written.
size_t assemble_trace(const std::string& folder, const std::string& path, const nlohmann::json& about);

}  // namespace tandem::program_tools
