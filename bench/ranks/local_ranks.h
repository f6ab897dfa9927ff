#pragma once
// The ranks this process drives: in the threads mode one thread per GPU 0..nranks-1 (their
// communicators made together from this thread), when a launcher started one process per rank this
// process's one rank (ranks/process_rank.h). Each is handed over as a LocalRank; what runs on it
// (the benchmark's RankContext, harness/bench_ranks.h) is the caller's, so one body serves both modes.
#include <nccl.h>

#include <functional>
#include <string>
#include <vector>

#include "ranks/coordinator.h"
#include "ranks/launch_env.h"

namespace tandem::bench {

// What the ranks layer needs from its caller: where this process sits among the ranks, what the
// command line asked for, and how long any wait for a peer may take.
struct RankLaunch {
  LaunchEnv launch;
  LaunchRequest request;
  double timeout_s = 120;
};

// One local rank, ready: its place, its GPU (current on its thread), the other ranks, and a
// communicator over every rank with NCCL's default settings. Whoever takes ownership of `comm`
// sets it to nullptr; one still set when the body fails is aborted.
struct LocalRank {
  int rank;
  int size;
  int device;
  Coordinator& peers;
  ncclComm_t& comm;
};

// Runs `body` on every local rank and returns once all have finished. Throws after every local rank
// has stopped (the first error); a failing process-mode rank aborts its communicators so that its
// peers fail fast (an NCCL error) or at their time-out, never hang. `notes` receives what rank 0
// should tell the user about the launch (process mode).
void run_local_ranks(const RankLaunch& launch, int nranks, const std::function<void(LocalRank&)>& body,
                     std::vector<std::string>* notes = nullptr);

// Whether `rank` collects this process's results: rank 0's thread, or the process's one rank (every
// process of a launch collects them, so all exit with the same status; only rank 0 reports them).
inline bool collects_results(const LaunchEnv& launch, int rank) { return launch.is_process_mode() || rank == 0; }
// Whether this process reports the run (prints, writes result files): rank 0's.
inline bool reports_results(const LaunchEnv& launch) { return launch.rank == 0; }

}  // namespace tandem::bench
