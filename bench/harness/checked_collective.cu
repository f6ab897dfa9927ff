#include <string>

#include "harness/checked_collective.h"
#include "harness/values.cuh"
#include "tandem/cuda_check.h"

namespace tandem::bench {
namespace {

// Sum over ranks of the value every rank holds at `index`.
__device__ float sum_over_ranks(uint64_t seed, int nranks, size_t index) {
  float sum = 0;
  for (int r = 0; r < nranks; ++r) sum += small_integer(seed, r, index);
  return sum;
}

// The value output element i must hold, from every rank's input (rank r's element j is
// small_integer(seed, r, j)); `count` is NCCL's count of the collective. From the kind's record
// (tandem/collective.h): a reduction's element is the sum over ranks of the input at its place in
// this rank's segment (or in the buffer); a move's chunk c comes from rank c's input, this rank's
// segment of it (or all of it); a broadcast's elements are the root's (rank 0's, as the benchmark
// issues it).
struct Expected {
  bool reduces, send_per_rank, has_root;
  uint64_t seed;
  int rank, nranks;
  size_t count;
  __device__ float operator()(size_t i) const {
    const size_t own_segment = send_per_rank ? size_t(rank) * count : 0;
    if (reduces) return sum_over_ranks(seed, nranks, own_segment + i);
    if (has_root) return small_integer(seed, 0, i);
    return small_integer(seed, i / count, own_segment + i % count);
  }
};

template <class T>
__global__ void count_mismatches_kernel(const T* out, size_t n, Expected expected, unsigned long long* wrong) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    if (!(to_float(out[i]) == expected(i))) ++local;
  if (local) atomicAdd(wrong, local);
}

}  // namespace

void check_divisible(Collective kind, uint64_t bytes, DType dtype, int nranks) {
  // The nccl-tests size holds this many elements per unit of NCCL's count: 1, or one per rank.
  const uint64_t pieces = size_elements(kind, 1, nranks);
  const uint64_t unit = dtype_size(dtype) * pieces;
  if (bytes == 0 || bytes % unit != 0)
    TANDEM_THROW(std::string(to_string(kind)) + ": size " + std::to_string(bytes) + " B is not divisible by " +
                 std::to_string(pieces) + " rank(s) x " + std::to_string(dtype_size(dtype)) + " B (" +
                 to_string(dtype) + ")");
}

CheckedCollective::~CheckedCollective() { cudaFree(wrong_); }

void CheckedCollective::setup(RankContext& ctx, Collective kind, uint64_t bytes, DType dtype, uint64_t seed,
                              bool in_place) {
  // Rank r would overwrite chunk r of a peer's buffer while that peer still sends it.
  TANDEM_REQUIRE(!in_place || kind != Collective::AllToAll,
                 "all-to-all has no in-place form (NCCL's ncclAlltoAll needs separate buffers); "
                 "run it without --in-place");
  check_divisible(kind, bytes, dtype, ctx.nranks);
  const size_t elem = dtype_size(dtype);
  seed_ = seed;
  rank_ = ctx.rank;
  nranks_ = ctx.nranks;
  in_place_ = in_place;
  call_.kind = kind;
  call_.dtype = dtype;
  call_.count = int64_t(bytes / elem / size_elements(kind, 1, nranks_));
  const size_t send_count = size_t(call_.send_elements(nranks_)), recv_count = size_t(call_.recv_elements(nranks_));
  // In place, only the larger buffer is allocated and the smaller one lies inside it where NCCL's
  // in-place forms expect it: at the same address when the counts are equal (all-reduce), else as
  // this rank's chunk (all-gather: send = recv + rank x count; reduce-scatter: recv = send + rank x
  // count).
  char* send = nullptr;
  char* recv = nullptr;
  if (!in_place) {
    send = static_cast<char*>(memory_.allocate(send_count * elem));
    recv = static_cast<char*>(memory_.allocate(recv_count * elem));
  } else if (send_count == recv_count) {
    send = recv = static_cast<char*>(memory_.allocate(send_count * elem));
  } else if (send_count > recv_count) {
    send = static_cast<char*>(memory_.allocate(send_count * elem));
    recv = send + size_t(rank_) * recv_count * elem;
  } else {
    recv = static_cast<char*>(memory_.allocate(recv_count * elem));
    send = recv + size_t(rank_) * send_count * elem;
  }
  call_.send = send;
  call_.recv = recv;
  TANDEM_CUDA_CHECK(cudaMalloc(&wrong_, sizeof(unsigned long long)));
  fill_input(ctx.compute);
  ctx.wait(ctx.compute, std::string(to_string(kind)) + " setup");
}

void CheckedCollective::fill_input(cudaStream_t stream) {
  const size_t n = size_t(call_.send_elements(nranks_));
  dispatch_dtype(call_.dtype, [&](auto t) {
    using T = decltype(t);
    fill_values_kernel<T><<<grid_for(n), 256, 0, stream>>>(static_cast<T*>(const_cast<void*>(call_.send)), n, seed_,
                                                           static_cast<uint64_t>(rank_), Fill::SmallIntegers);
  });
  TANDEM_CUDA_CHECK_LAUNCH();
}

void CheckedCollective::poison_output(cudaStream_t stream) {
  poison(call_.recv, call_.dtype, size_t(call_.recv_elements(nranks_)), stream);
  // In place the input shares the output's memory: the poison hit it too, and the run needs it.
  if (in_place_) fill_input(stream);
}

int64_t CheckedCollective::count_wrong(RankContext& ctx) {
  const size_t n = size_t(call_.recv_elements(nranks_));
  const CollectiveRecord& kind = record_of(call_.kind);
  const Expected expected{kind.reduces, kind.send_per_rank, kind.has_root, seed_, rank_, nranks_, size_t(call_.count)};
  TANDEM_CUDA_CHECK(cudaMemsetAsync(wrong_, 0, sizeof(unsigned long long), ctx.compute));
  dispatch_dtype(call_.dtype, [&](auto t) {
    using T = decltype(t);
    count_mismatches_kernel<T>
        <<<grid_for(n), 256, 0, ctx.compute>>>(static_cast<const T*>(call_.recv), n, expected, wrong_);
  });
  TANDEM_CUDA_CHECK_LAUNCH();
  unsigned long long wrong = 0;
  TANDEM_CUDA_CHECK(cudaMemcpyAsync(&wrong, wrong_, sizeof(wrong), cudaMemcpyDeviceToHost, ctx.compute));
  ctx.wait(ctx.compute, std::string(to_string(call_.kind)) + " check");
  return static_cast<int64_t>(wrong);
}

}  // namespace tandem::bench
