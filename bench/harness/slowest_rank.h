#pragma once
// Timing series reduced over ranks the way every step time is: a step is over only when the slowest
// rank is done (metrics.h max_over_ranks), so each series becomes the summary of its per-step maxima.
#include <vector>

#include "harness/metrics.h"
#include "ranks/coordinator.h"

namespace tandem::bench {

// Gathers this rank's timing series (one exchange for all of them) and reduces each: per step the
// slowest rank, then median, min and max over steps. Every rank gets the same result; all ranks
// call it. An empty series gives an empty Summary.
std::vector<Summary> slowest_rank_summaries(Coordinator& ranks, const std::vector<std::vector<double>>& mine);

}  // namespace tandem::bench
