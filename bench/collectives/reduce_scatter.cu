#include "collectives/collective_base.cuh"

namespace tandem::bench {
namespace {

// This rank keeps chunk `rank` of the sum: output element j is the sum of every rank's element
// rank*chunk + j.
struct ReduceScatterExpected {
  uint64_t seed;
  int nranks;
  size_t offset;
  __device__ float operator()(size_t j) const { return sum_over_ranks(seed, nranks, offset + j); }
};

class ReduceScatter final : public BufferedCollective {
 public:
  const char* name() const override { return "reduce-scatter"; }
  double busbw_factor(int n) const override { return double(n - 1) / n; }
  int shards(int n) const override { return n; }
  void setup(RankContext& ctx, size_t bytes, DType dtype, uint64_t seed, bool in_place) override {
    allocate(ctx, bytes, dtype, seed, CollectiveCall::Kind::ReduceScatter, in_place);
  }
  std::string route_through_copy_engines(const CopyEngineLanes* lanes) override {
    if (lanes) ensure_scratch(send_count_);
    lanes_ = lanes;
    return "";
  }
  int64_t count_wrong(RankContext& ctx) override {
    return count_wrong_with(ctx, ReduceScatterExpected{seed_, nranks_, size_t(rank_) * recv_count_});
  }
  double hbm_bytes() const override { return bytes_ + double(bytes_) / nranks_; }
};

}  // namespace

std::unique_ptr<Collective> make_reduce_scatter() { return std::make_unique<ReduceScatter>(); }

}  // namespace tandem::bench
