#include "collectives/collective_base.cuh"
#include "tandem/copy_engine.h"

namespace tandem::bench {
namespace {

struct AllReduceExpected {
  uint64_t seed;
  int nranks;
  __device__ float operator()(size_t i) const { return sum_over_ranks(seed, nranks, i); }
};

class AllReduce final : public BufferedCollective {
 public:
  const char* name() const override { return "all-reduce"; }
  double busbw_factor(int n) const override { return 2.0 * (n - 1) / n; }
  int shards(int) const override { return 1; }
  void setup(RankContext& ctx, size_t bytes, DType dtype, uint64_t seed, bool in_place) override {
    allocate(ctx, bytes, dtype, seed, CollectiveCall::Kind::AllReduce, in_place);
  }
  std::string route_through_copy_engines(const CopyEngineLanes* lanes) override {
    if (lanes) {
      const std::string why = copy_engine_refusal(tandem::Collective::AllReduce, recv_count_, nranks_, to_nccl(dtype_));
      if (!why.empty()) return why;
      ensure_scratch(recv_count_);
    }
    lanes_ = lanes;
    return "";
  }
  int64_t count_wrong(RankContext& ctx) override { return count_wrong_with(ctx, AllReduceExpected{seed_, nranks_}); }
  double hbm_bytes() const override { return 2.0 * bytes_; }
};

}  // namespace

std::unique_ptr<Collective> make_all_reduce() { return std::make_unique<AllReduce>(); }

}  // namespace tandem::bench
