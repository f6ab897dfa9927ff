#pragma once
// The ranks this process drives, each given a ready RankContext: in the threads mode one thread per
// GPU 0..nranks-1 (their communicators made together from this thread), when a launcher started
// one process per rank this process's one rank (harness/process_rank.h). The runners are written
// once against RankContext and its Coordinator, and run unchanged in both.
#include <functional>
#include <string>
#include <vector>

#include "harness/bench_options.h"
#include "harness/rank_context.h"

namespace tandem::bench {

// Runs `body` on every local rank and returns once all have finished. Throws after every local rank
// has stopped (the first error); a failing process-mode rank aborts its communicators so that its
// peers fail fast (an NCCL error) or at their time-out, never hang. `notes` receives what rank 0
// should tell the user about the launch (process mode).
void run_on_local_ranks(const BenchOptions& options, int nranks, const std::function<void(RankContext&)>& body,
                        std::vector<std::string>* notes = nullptr);

// Whether `rank` collects this process's results: rank 0's thread, or the process's one rank (every
// process of a launch collects them, so all exit with the same status; only rank 0 prints them).
inline bool collects_results(const BenchOptions& options, int rank) {
  return options.launch.is_process_mode() || rank == 0;
}

}  // namespace tandem::bench
