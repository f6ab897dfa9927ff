#include "collectives/collective_base.cuh"

namespace tandem::bench {
namespace {

// Output element i is element (i mod chunk) of rank (i / chunk)'s input.
struct AllGatherExpected {
  uint64_t seed;
  size_t chunk;
  __device__ float operator()(size_t i) const { return small_integer(seed, i / chunk, i % chunk); }
};

class AllGather final : public BufferedCollective {
 public:
  const char* name() const override { return "all-gather"; }
  double busbw_factor(int n) const override { return double(n - 1) / n; }
  int shards(int n) const override { return n; }
  void setup(RankContext& ctx, size_t bytes, DType dtype, uint64_t seed, bool in_place) override {
    allocate(ctx, bytes, dtype, seed, CollectiveCall::Kind::AllGather, in_place);
  }
  int64_t count_wrong(RankContext& ctx) override {
    return count_wrong_with(ctx, AllGatherExpected{seed_, send_count_});
  }
  // Out of place: the input is read and the whole output written; in place, the own chunk stays
  // where it is (read once to send, never written).
  double hbm_bytes() const override { return in_place_ ? double(bytes_) : double(bytes_) / nranks_ + bytes_; }
};

}  // namespace

std::unique_ptr<Collective> make_all_gather() { return std::make_unique<AllGather>(); }

}  // namespace tandem::bench
