#pragma once
// One process's timeline: who the process was, where its recording stands, and per device the
// overlap figures of its steps (tandem/overlap.h) with, under a shape policy, the check of the
// targeted rule (tandem/shaping_check.h). The interposer builds it at exit (preload/timeline_figures.h)
// and the program tools read it back to put a job's processes together (program_tools/job_timeline.h);
// both see this one type, whose JSON form is tandem/process_timeline_json.h. Header-only data.
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/enum_table.h"
#include "tandem/overlap.h"
#include "tandem/shaping_check.h"

namespace tandem {

// Where the timeline stands in a process.
enum class TimelineState {
  Off,           // not asked for
  NotStarted,    // asked for, but the process saw no CUDA activity
  Recorded,      // recorded until the process ended
  SteppedAside,  // another profiler owns CUPTI: nothing recorded, or only until it took over
  Failed,        // CUPTI or the recorder could not be used
};

// The states' names in the JSON and the lines, in the enum's order.
inline constexpr const char* kTimelineStateNames[] = {"off", "not-started", "recorded", "stepped-aside", "failed"};
static_assert(covers(kTimelineStateNames, TimelineState::Failed), "a name for every state");

inline const char* to_string(TimelineState state) { return table_entry(kTimelineStateNames, state); }

inline std::optional<TimelineState> parse_timeline_state(std::string_view text) {
  for (size_t i = 0; i < std::size(kTimelineStateNames); ++i)
    if (text == kTimelineStateNames[i]) return static_cast<TimelineState>(i);
  return std::nullopt;
}

// The activity records the recorder knows it lost: every busy figure may be low by what they held.
struct TimelineLosses {
  uint64_t dropped = 0;     // dropped by CUPTI
  uint64_t incomplete = 0;  // still running at the last flush
  uint64_t over_limit = 0;  // beyond tandem's limit on records
  uint64_t total() const { return dropped + incomplete + over_limit; }
};

struct DeviceTimeline {
  uint32_t device = 0;
  RankFigures figures;
  uint64_t kernels = 0, copies = 0, memsets = 0;  // records by kind
  uint64_t communication = 0;                     // records classified as communication
  std::optional<ShapingCheck> shaping;            // under a shape policy: its kernels against what ran
};

struct ProcessTimeline {
  long pid = 0;
  // The parent when the process started (getppid at its start): a process whose parent recorded as the
  // same rank is a helper of that rank, not a rank (program_tools/job_timeline.h). 0: unknown.
  long parent_pid = 0;
  std::optional<int> rank;  // the launcher's (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID...)
  std::string host;
  TimelineState state = TimelineState::Off;
  std::string reason;                        // SteppedAside, Failed: why
  std::optional<int64_t> recorded_until_ns;  // SteppedAside after recording: when the profiler took over
  std::string step_range;                    // the glob, "" for none
  bool steps_from_ranges = false;            // false: the whole run is one step (no pattern, or nothing matched)
  uint64_t open_steps = 0;                   // matched ranges never closed (not counted)
  uint64_t unplaced_steps = 0;               // steps without issue marks: their windows are their host ranges
  std::vector<DeviceTimeline> devices;       // by device id
  TimelineLosses lost;
  uint64_t records_lost() const { return lost.total(); }
};

// The median of one figure over the steps (0 for none), as the lines and the JSON's "median" give it.
inline int64_t median_ns(const std::vector<StepFigures>& steps, int64_t StepFigures::*field) {
  std::vector<double> values;
  for (const StepFigures& s : steps) values.push_back(static_cast<double>(s.*field));
  return static_cast<int64_t>(median_of(values));
}

}  // namespace tandem
