#pragma once
// `tandem run --timeline [--trace FILE] [--step-range PATTERN]` (docs/RUN.md, "The timeline"): where
// the program's processes leave their timelines, and what tandem run makes of them once the program
// has ended: the job's line (each step's slowest rank) and the assembled Chrome trace.
//
// The job's folder, chosen so that no network is needed:
//   - `tandem run -- LAUNCHER ...` (or a single process): a private folder of this tandem run. Every
//     rank is a descendant of the program tandem run waits for, so once it has exited every rank's
//     file is there; tandem run reads them, prints the job's line, writes the trace, removes it.
//   - `LAUNCHER ... tandem run -- CMD` (this tandem run is one rank of a launcher's job): a folder
//     per job under the temporary folder, named by the launcher's job key (as the benchmark's file
//     rendezvous: bench/ranks/launch_env.h), shared by the ranks of this node. Each tandem run marks
//     its rank done after its program exits; the one that finds every rank of the world done (and
//     claims the job with an O_EXCL file) prints the job's line and writes the trace. Ranks on other
//     nodes write their own folder there: across nodes, each node prints the line of its ranks.
#include <optional>
#include <string>
#include <vector>

#include "run_environment.h"

namespace tandem::cli {

struct RunTimeline {
  bool enabled = false;
  bool trace = false;
  std::string trace_file;  // absolute
  std::string json_file;   // --timeline-json, absolute
  std::string step_range;
  std::string folder;   // where the processes write timeline-<pid>.json and trace-<pid>.jsonl
  bool shared = false;  // the launcher's job folder (see above), else this run's own
  int world_size = 1;   // shared: the launcher's world
  int ranks_here = 1;   // shared: the ranks of this node, which mark themselves done in the folder
  int rank = 0;
  double started_s = 0;  // wall clock at the start: files older than this are from an earlier job
};

// The folder and the checks (--trace writable, a step pattern without a NUL) before the program
// starts. Throws tandem::UserError for the user's input, tandem::Error for a folder it cannot make.
RunTimeline prepare_timeline(const RunOptions& options);

// TANDEM_TIMELINE, TANDEM_TIMELINE_DIR and TANDEM_STEP_RANGE for the child (removed when off), and
// NVTX_INJECTION64_PATH pointing at the interposer (`library`) unless the parent set one itself
// (another tool's injection wins; the interposer then steps aside).
std::vector<EnvChange> timeline_environment(const RunTimeline& timeline, const std::string& library,
                                            const char* existing_nvtx_injection);

// After the program exited (`exit_status`: tandem run's, 128 + signal when it was killed): the job's
// line on stderr when several processes recorded (each process printed its own figures already), the
// trace, the folder removed. When no process recorded, the --trace and --timeline-json files are not
// written (an earlier file stays) and one line says why. One rank of a launcher's job whose other
// ranks do not all run under tandem run reports the ranks it has and names those it waited for.
// Never throws and never changes the exit status: a problem is one warning line.
void finish_timeline(const RunTimeline& timeline, int exit_status);

}  // namespace tandem::cli
