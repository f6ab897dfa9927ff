#include "collectives/collective_base.cuh"

namespace tandem::bench {
namespace {

// Chunk r of this rank's output is chunk `rank` of rank r's input.
struct AllToAllExpected {
  uint64_t seed;
  int rank;
  size_t chunk;
  __device__ float operator()(size_t i) const {
    return small_integer(seed, i / chunk, size_t(rank) * chunk + i % chunk);
  }
};

class AllToAll final : public BufferedCollective {
 public:
  const char* name() const override { return "all-to-all"; }
  double busbw_factor(int n) const override { return double(n - 1) / n; }
  int shards(int n) const override { return n; }
  void setup(RankContext& ctx, size_t bytes, DType dtype, uint64_t seed, bool in_place) override {
    // Rank r would overwrite chunk r of a peer's buffer while that peer still sends it.
    TANDEM_REQUIRE(!in_place,
                   "all-to-all has no in-place form (NCCL's ncclAlltoAll needs separate buffers); "
                   "run it without --in-place");
    allocate(ctx, bytes, dtype, seed, CollectiveCall::Kind::AllToAll, false);
  }
  int64_t count_wrong(RankContext& ctx) override {
    return count_wrong_with(ctx, AllToAllExpected{seed_, rank_, send_count_ / nranks_});
  }
  double hbm_bytes() const override { return 2.0 * bytes_; }
};

}  // namespace

std::unique_ptr<Collective> make_all_to_all() { return std::make_unique<AllToAll>(); }

}  // namespace tandem::bench
