#include "harness/bench_ranks.h"

namespace tandem::bench {

RankLaunch rank_launch(const BenchOptions& options) {
  return RankLaunch{options.launch, options.launch_request, options.timeout_s};
}

void run_on_local_ranks(const BenchOptions& options, int nranks, const std::function<void(RankContext&)>& body,
                        std::vector<std::string>* notes) {
  run_local_ranks(
      rank_launch(options), nranks,
      [&](LocalRank& local) {
        RankContext ctx(local.rank, local.size, local.device, local.peers, local.comm, options.timeout_s);
        local.comm = nullptr;  // owned by the context from here on (aborted by it after a failure)
        body(ctx);
      },
      notes);
}

}  // namespace tandem::bench
