#pragma once
// What the timeline recorder handed back (timeline_recorder/tandem_timeline.h), turned into figures and
// output: each record classified as computation or communication, the steps (the program's NVTX
// ranges that matched the pattern) placed on each device's GPU time, the overlap figures per device
// (tandem/overlap.h) as a ProcessTimeline (tandem/process_timeline.h), and its renderings: the
// summary's lines and the process's events of the Chrome trace. Its JSON, the stats file's "timeline"
// and the per-process timeline file that `tandem run` and `tandem tune` read back, is
// tandem/process_timeline_json.h's. Pure: tested on CPU with synthetic records.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tandem/overlap.h"
#include "tandem/process_timeline.h"
#include "tandem/shaping_check.h"
#include "timeline_recorder/tandem_timeline.h"

namespace tandem::preload {

// A step as NVTX showed it (nvtx_steps.h), with its marks' correlation ids (0: none came back).
struct RawStep {
  std::string name;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t issued_after = 0;
  uint32_t issued_before = 0;
};

// The recorder's output, copied out of it, and the steps.
struct RawTimeline {
  std::vector<tandem_timeline_activity> activities;
  std::vector<std::string> names;
  std::vector<uint32_t> communication_correlations;  // sorted
  std::vector<RawStep> steps;                        // the ranges that matched the pattern, closed
  uint64_t open_steps = 0;                           // matched ranges never closed
  tandem_timeline_counts counts{};
  // Under a shape policy: the sizes each kernel was launched with, shaped and as asked
  // (tandem/shaping_check.h); the check of the targeted rule is made only with them.
  std::optional<LaunchSizesByName> launch_sizes;
};

// Communication: NCCL's kernels, the copy-engine collectives' sum kernels (tandem/kernel_names.h),
// copies between two devices, and any copy or memset issued inside tandem's communication work (an
// NCCL collective, the copy-engine route: its correlation is in `communication`). Everything else is
// computation, the program's own copies and memsets included.
ActivityClass classify(const tandem_timeline_activity& a, const std::string& name,
                       const std::vector<uint32_t>& communication);

// The steps in the order of their starts, outermost only (a step that ran inside another one, on
// another thread, counts once), as tandem/overlap.h's HostStep.
std::vector<HostStep> host_steps(const RawTimeline& raw);

// Classifies, places the steps on each device's GPU time (tandem/overlap.h's gpu_windows; the whole
// run when there is none) and computes each device's figures. The identity fields are the caller's.
ProcessTimeline build_timeline(const RawTimeline& raw, const std::string& step_range);

// The summary's lines ("tandem[pid]: timeline: ..."), for the exit report.
std::string render_timeline_text(const ProcessTimeline& t);

// This process's events for the Chrome trace, one JSON object per line after the part's header,
// times in absolute nanoseconds (tandem/process_timeline_json.h) that `tandem run` puts on the job's
// clock when it assembles the trace (program_tools/trace_assembly.h). One trace process per process (its pid), one
// track per device and stream, one track of steps; computation and communication in categories and colours of their
// own.
void write_trace_events(std::ostream& out, const RawTimeline& raw, const ProcessTimeline& t);

}  // namespace tandem::preload
