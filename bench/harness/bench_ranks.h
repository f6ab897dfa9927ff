#pragma once
// The benchmark on the ranks layer (ranks/local_ranks.h): every local rank, threads or this
// process's one rank, given a ready RankContext. The runners are written once against RankContext
// and its Coordinator, and run unchanged in both modes.
#include <functional>
#include <string>
#include <vector>

#include "harness/bench_options.h"
#include "harness/rank_context.h"
#include "ranks/local_ranks.h"

namespace tandem::bench {

// What the ranks layer needs of the options: the launch, what the command line asked of it, --timeout.
RankLaunch rank_launch(const BenchOptions& options);

// Runs `body` on every local rank (ranks/local_ranks.h run_local_ranks) with its RankContext, which
// owns the rank's communicators from then on. Throws after every local rank has stopped.
void run_on_local_ranks(const BenchOptions& options, int nranks, const std::function<void(RankContext&)>& body,
                        std::vector<std::string>* notes = nullptr);

inline bool collects_results(const BenchOptions& options, int rank) { return collects_results(options.launch, rank); }

}  // namespace tandem::bench
