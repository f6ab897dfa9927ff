#pragma once
// Overlap accounting of a program's GPU activity, per rank and per step (docs/RUN.md, "The
// timeline"; the definitions are DESIGN.md's "Reach and visibility in real programs"):
//
//   computation busy        the union of the computation intervals of every stream
//   communication busy      the union of the communication intervals of every stream
//   overlapped              their intersection: communication while computation runs
//   exposed communication   communication busy - overlapped: communication with no computation beside it
//   idle                    step - union of both: the GPU runs nothing
//   share hidden            overlapped / communication busy
//
// Every interval is clipped to the step it is counted in, so a kernel that crosses a step boundary
// counts in each step for the part inside it. Intervals of one class on several streams count once
// where they overlap (a union, not a sum). Pure C++ on integer nanoseconds, so every figure is exact
// and CPU-tested (tests/cpu/test_overlap_*.cpp); the interposer's recorder feeds it CUPTI's
// records, `tandem run` and `tandem tune` read its figures back.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tandem {

enum class ActivityClass : uint8_t { Computation, Communication };
const char* to_string(ActivityClass);

// One interval of GPU work on one device: a kernel, a memory copy or a memset.
struct Activity {
  int64_t start_ns = 0;
  int64_t end_ns = 0;  // an interval with end <= start covers nothing
  ActivityClass cls = ActivityClass::Computation;
  uint32_t issued = 0;  // where the call that issued it falls in the process's order of calls; 0 unknown
};

// A step: a named time range (the program's NVTX range, or the whole run).
struct StepRange {
  std::string name;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// A step as the program marks it on the host (an NVTX range), and where its start and end fall in
// the order in which the process issued its GPU work (0 when unknown).
struct HostStep {
  std::string name;
  int64_t start_ns = 0;  // host clock, the activities' clock
  int64_t end_ns = 0;
  uint32_t issued_after = 0;   // the work issued inside the step comes after this
  uint32_t issued_before = 0;  // ... and before this
};

// The steps' windows on the GPU. A program issues its GPU work ahead of the GPU (the host may be
// steps ahead), so a step's host range says little about when its work ran; its issue order does:
// step k's window runs from the start of the first activity issued inside it to the start of the
// first activity of the next step that issued any (the last step: to the end of its last activity).
// Work that runs past its step's window counts in the next window; a step that issued nothing has an
// empty window where the next one begins. A step without issue marks keeps its host range (the
// activities' clock is the host's). `steps` sorted by start.
std::vector<StepRange> gpu_windows(const std::vector<HostStep>& steps, const std::vector<Activity>& activities);

// What one rank (one device of one process) recorded.
struct RankRecord {
  std::vector<Activity> activities;  // any order
  // Empty: the whole run is one step, named "run", from the first activity's start to the last one's
  // end. A step may hold no activity (all idle).
  std::vector<StepRange> steps;
  // Added to every time of this rank to put it on the job's clock (ranks on several hosts); zero on
  // one host, where every process reads the same clock.
  int64_t clock_offset_ns = 0;
  uint64_t records_lost = 0;  // records the recorder knows it lost (reported, never guessed at)
};

struct StepFigures {
  std::string name;
  int64_t start_ns = 0;  // on the job's clock (clock_offset_ns applied)
  int64_t end_ns = 0;
  int64_t step_ns = 0;
  int64_t computation_ns = 0;    // computation busy
  int64_t communication_ns = 0;  // communication busy
  int64_t overlapped_ns = 0;
  int64_t exposed_communication_ns = 0;
  int64_t idle_ns = 0;
  uint64_t activities = 0;  // intervals that reach into the step
  // overlapped / communication busy; none when the step has no communication.
  std::optional<double> hidden_share() const;
};

struct RankFigures {
  std::vector<StepFigures> steps;  // in the order of the steps' starts
  uint64_t records_lost = 0;
  uint64_t activities = 0;     // every interval recorded
  uint64_t outside_steps = 0;  // intervals that reach into no step
  StepFigures total() const;   // every figure summed over the steps, named "total"
};

// The figures of every step of `record`.
RankFigures account(const RankRecord& record);

// The steps among `ranges` (say, every NVTX range whose name matched the user's pattern): a range
// inside another one is dropped (a step named like its own sub-ranges counts once), the others are
// sorted by start. Ranges that end before they start are dropped.
std::vector<StepRange> outermost_ranges(std::vector<StepRange> ranges);

// The job's step k: the k-th step of every rank, and the slowest of them (the longest step_ns; on a
// tie, the lowest rank), since a synchronous job's step ends when its slowest rank's does.
struct JobStep {
  size_t index = 0;
  size_t slowest_rank = 0;    // index into the ranks given
  StepFigures slowest;        // that rank's figures for the step
  int64_t span_start_ns = 0;  // the earliest start and the latest end over the ranks (job clock)
  int64_t span_end_ns = 0;
};

struct JobFigures {
  size_t ranks = 0;
  std::vector<JobStep> steps;  // the steps every rank has (a rank with more steps: the extra ones are left out)
  size_t steps_left_out = 0;   // steps of some ranks that not every rank has
  uint64_t records_lost = 0;   // summed over the ranks
};

JobFigures job_figures(const std::vector<RankFigures>& ranks);

// Median (the mean of the middle two for an even count) of the values; 0 for none.
double median_of(std::vector<double> values);

}  // namespace tandem
