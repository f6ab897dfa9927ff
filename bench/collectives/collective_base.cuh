#pragma once
// Buffers, fills and exact checks shared by the collectives. Rank r's send buffer holds
// small_integer(seed, r, i); each collective states the value its output element i must hold as a
// device functor, and the check counts elements that differ (NaN poison never matches).
#include <memory>
#include <string>
#include <vector>

#include "collectives/collective_call.h"
#include "harness/collective.h"
#include "harness/values.cuh"
#include "tandem/cuda_check.h"
#include "tandem/symmetric_windows.h"

namespace tandem::bench {

template <class T, class Expected>
__global__ void count_mismatches_kernel(const T* out, size_t n, Expected expected, unsigned long long* wrong) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    if (!(to_float(out[i]) == expected(i))) ++local;
  if (local) atomicAdd(wrong, local);
}

class BufferedCollective : public Collective {
 public:
  // Buffers come from ncclMemAlloc (cuMem-backed), the kind NCCL can register as symmetric windows
  // for copy-engine collectives; they behave as ordinary device memory otherwise.
  ~BufferedCollective() override {
    // Deregistration is collective and a destructor cannot meet the other ranks: windows still
    // registered (an error unwound past release_windows()) are left to the communicators' destroy or
    // abort.
    if (windows_) windows_->abandon();
    for (const Allocation& a : allocations_) ncclMemFree(a.ptr);
    if (scratch_) ncclMemFree(scratch_);
    cudaFree(wrong_);
  }

  // Every allocation becomes one window; in place, the one buffer covers both ranges, and NCCL finds
  // the window that contains each pointer.
  void use_symmetric_windows(RankContext& ctx, ncclComm_t comm) override {
    if (!windows_) windows_ = std::make_unique<SymmetricWindows>(ctx.wait_rules());
    if (windows_->registered_on(comm)) return;
    std::vector<ByteRange> ranges;
    for (const Allocation& a : allocations_) ranges.push_back({a.ptr, int64_t(a.bytes)});
    if (scratch_) ranges.push_back({scratch_, int64_t(scratch_count_ * dtype_size(dtype_))});
    windows_->add(comm, ranges, name());
  }

  // The exchange needs no scratch buffer: only the reductions override this.
  std::string route_through_copy_engines(const CopyEngineLanes* lanes) override {
    lanes_ = lanes;
    return "";
  }

  void release_windows(RankContext&) override {
    if (windows_) windows_->release(name());
  }
  size_t bytes() const override { return bytes_; }

  // NCCL's own all-to-all rather than grouped point-to-point: the collective nccl-tests time.
  void enqueue(ncclComm_t comm, cudaStream_t stream) override {
    issue_collective(call_, nranks_, comm, stream, {/*all_to_all_api=*/true, lanes_, scratch_});
  }

  void poison_output(cudaStream_t stream) override {
    dispatch_dtype(dtype_, [&](auto t) {
      using T = decltype(t);
      poison_kernel<T><<<grid_for(recv_count_), 256, 0, stream>>>(static_cast<T*>(recv_), recv_count_);
    });
    TANDEM_CUDA_CHECK_LAUNCH();
    // In place the input shares the output's memory: the poison hit it too, and the run needs it.
    if (in_place_) fill_input(stream);
  }

 protected:
  // `bytes` (CollectiveCall::bytes) is validated by check_divisible(). `in_place` allocates the larger
  // buffer only and puts the smaller one inside it where NCCL's in-place forms expect it: at the same
  // address when the counts are equal (all-reduce), else as this rank's chunk (all-gather: send =
  // recv + rank x send_count; reduce-scatter: recv = send + rank x recv_count).
  void allocate(RankContext& ctx, size_t bytes, DType dtype, uint64_t seed, CollectiveCall::Kind kind, bool in_place) {
    const size_t elem = dtype_size(dtype);
    check_divisible(*this, bytes, dtype, ctx.nranks);
    bytes_ = bytes;
    dtype_ = dtype;
    seed_ = seed;
    rank_ = ctx.rank;
    nranks_ = ctx.nranks;
    call_.kind = kind;
    call_.dtype = dtype;
    call_.count = int64_t(bytes / elem / (kind == CollectiveCall::Kind::AllReduce ? 1 : size_t(nranks_)));
    send_count_ = size_t(call_.send_elements(nranks_));
    recv_count_ = size_t(call_.recv_elements(nranks_));
    in_place_ = in_place;
    auto allocate_buffer = [&](size_t count) {
      void* ptr = nullptr;
      TANDEM_NCCL_CHECK(nullptr, ncclMemAlloc(&ptr, count * elem));
      allocations_.push_back({ptr, count * elem});
      return static_cast<char*>(ptr);
    };
    if (!in_place) {
      send_ = allocate_buffer(send_count_);
      recv_ = allocate_buffer(recv_count_);
    } else if (send_count_ == recv_count_) {
      send_ = recv_ = allocate_buffer(send_count_);
    } else if (send_count_ > recv_count_) {
      send_ = allocate_buffer(send_count_);
      recv_ = static_cast<char*>(send_) + size_t(rank_) * recv_count_ * elem;
    } else {
      recv_ = allocate_buffer(recv_count_);
      send_ = static_cast<char*>(recv_) + size_t(rank_) * send_count_ * elem;
    }
    call_.send = send_;
    call_.recv = recv_;
    TANDEM_CUDA_CHECK(cudaMalloc(&wrong_, sizeof(unsigned long long)));
    fill_input(ctx.compute);
    ctx.wait(ctx.compute, std::string(name()) + " setup");
  }

  // Rank r's input: small_integer(seed, r, i).
  void fill_input(cudaStream_t stream) {
    dispatch_dtype(dtype_, [&](auto t) {
      using T = decltype(t);
      fill_values_kernel<T><<<grid_for(send_count_), 256, 0, stream>>>(
          static_cast<T*>(send_), send_count_, seed_, static_cast<uint64_t>(rank_), Fill::SmallIntegers);
    });
    TANDEM_CUDA_CHECK_LAUNCH();
  }

  // The scratch buffer of a copy-engine reduction: `count` elements, allocated once, on first use
  // (before the windows of the communicator that needs it are registered).
  void ensure_scratch(size_t count) {
    if (scratch_) return;
    TANDEM_NCCL_CHECK(nullptr, ncclMemAlloc(&scratch_, count * dtype_size(dtype_)));
    scratch_count_ = count;
  }

  template <class Expected>
  int64_t count_wrong_with(RankContext& ctx, Expected expected) {
    TANDEM_CUDA_CHECK(cudaMemsetAsync(wrong_, 0, sizeof(unsigned long long), ctx.compute));
    dispatch_dtype(dtype_, [&](auto t) {
      using T = decltype(t);
      count_mismatches_kernel<T, Expected>
          <<<grid_for(recv_count_), 256, 0, ctx.compute>>>(static_cast<const T*>(recv_), recv_count_, expected, wrong_);
    });
    TANDEM_CUDA_CHECK_LAUNCH();
    unsigned long long wrong = 0;
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(&wrong, wrong_, sizeof(wrong), cudaMemcpyDeviceToHost, ctx.compute));
    ctx.wait(ctx.compute, std::string(name()) + " check");
    return static_cast<int64_t>(wrong);
  }

  CollectiveCall call_;  // what enqueue() issues
  size_t bytes_ = 0;
  DType dtype_ = DType::BF16;
  uint64_t seed_ = 0;
  int rank_ = 0, nranks_ = 1;
  size_t send_count_ = 0, recv_count_ = 0;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  void* scratch_ = nullptr;  // copy-engine reductions only
  size_t scratch_count_ = 0;
  const CopyEngineLanes* lanes_ = nullptr;  // route_through_copy_engines(lanes) is in force
  bool in_place_ = false;
  unsigned long long* wrong_ = nullptr;

 private:
  struct Allocation {
    void* ptr;
    size_t bytes;
  };
  std::vector<Allocation> allocations_;        // send_ and recv_, or the one buffer both lie in
  std::unique_ptr<SymmetricWindows> windows_;  // created on first use, with the rank's wait rules
};

// Sum over ranks of the value every rank holds at `index`.
__device__ inline float sum_over_ranks(uint64_t seed, int nranks, size_t index) {
  float sum = 0;
  for (int r = 0; r < nranks; ++r) sum += small_integer(seed, r, index);
  return sum;
}

}  // namespace tandem::bench
