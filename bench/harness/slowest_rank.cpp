#include "harness/slowest_rank.h"

namespace tandem::bench {

std::vector<Summary> slowest_rank_summaries(Coordinator& ranks, const std::vector<std::vector<double>>& mine) {
  const auto gathered = ranks.all_gather_series(mine);  // one exchange for every series
  std::vector<Summary> out(mine.size());
  for (size_t f = 0; f < mine.size(); ++f) {
    if (mine[f].empty()) continue;
    std::vector<std::vector<double>> per_rank;
    for (const auto& r : gathered) per_rank.push_back(r.at(f));
    out[f] = summarize(max_over_ranks(per_rank));
  }
  return out;
}

}  // namespace tandem::bench
