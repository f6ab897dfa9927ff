#pragma once
// Buffers, fills and exact checks shared by the collectives. Rank r's send buffer holds
// small_integer(seed, r, i); each collective states the value its output element i must hold as a
// device functor, and the check counts elements that differ (NaN poison never matches).
#include <string>
#include <vector>

#include "harness/collective.h"
#include "harness/values.cuh"
#include "tandem/cuda_check.h"

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
    ncclMemFree(send_);
    ncclMemFree(recv_);
    if (scratch_) ncclMemFree(scratch_);
    cudaFree(wrong_);
  }

  void use_symmetric_windows(RankContext& ctx, ncclComm_t comm) override {
    for (const auto& w : windows_)
      if (w.comm == comm) return;
    const size_t elem = dtype_size(dtype_);
    Windows w{comm, nullptr, nullptr, nullptr};
    TANDEM_NCCL_CHECK(comm, ncclCommWindowRegister(comm, send_, send_count_ * elem, &w.send, NCCL_WIN_COLL_SYMMETRIC));
    ctx.await_communicator(comm, std::string(name()) + " send window");
    TANDEM_NCCL_CHECK(comm, ncclCommWindowRegister(comm, recv_, recv_count_ * elem, &w.recv, NCCL_WIN_COLL_SYMMETRIC));
    ctx.await_communicator(comm, std::string(name()) + " receive window");
    if (scratch_) {
      TANDEM_NCCL_CHECK(comm, ncclCommWindowRegister(comm, scratch_, scratch_count_ * elem, &w.scratch,
                                                     NCCL_WIN_COLL_SYMMETRIC));
      ctx.await_communicator(comm, std::string(name()) + " scratch window");
    }
    windows_.push_back(w);
  }

  void release_windows(RankContext& ctx) override {
    for (const auto& w : windows_) {
      for (ncclWindow_t handle : {w.send, w.recv, w.scratch}) {
        if (!handle) continue;
        TANDEM_NCCL_CHECK(w.comm, ncclCommWindowDeregister(w.comm, handle));
        ctx.await_communicator(w.comm, std::string(name()) + " window release");
      }
    }
    windows_.clear();
  }
  size_t bytes() const override { return bytes_; }

  void poison_output(cudaStream_t stream) override {
    dispatch_dtype(dtype_, [&](auto t) {
      using T = decltype(t);
      poison_kernel<T><<<grid_for(recv_count_), 256, 0, stream>>>(static_cast<T*>(recv_), recv_count_);
    });
    TANDEM_CUDA_CHECK_LAUNCH();
  }

 protected:
  // Send and receive counts are in elements; `bytes` was validated by check_divisible().
  void allocate(RankContext& ctx, size_t bytes, DType dtype, uint64_t seed, size_t send_count, size_t recv_count) {
    const size_t elem = dtype_size(dtype);
    check_divisible(*this, bytes, dtype, ctx.nranks);
    ctx_ = &ctx;
    bytes_ = bytes;
    dtype_ = dtype;
    seed_ = seed;
    rank_ = ctx.rank;
    nranks_ = ctx.nranks;
    send_count_ = send_count;
    recv_count_ = recv_count;
    TANDEM_NCCL_CHECK(nullptr, ncclMemAlloc(&send_, send_count * elem));
    TANDEM_NCCL_CHECK(nullptr, ncclMemAlloc(&recv_, recv_count * elem));
    TANDEM_CUDA_CHECK(cudaMalloc(&wrong_, sizeof(unsigned long long)));
    dispatch_dtype(dtype, [&](auto t) {
      using T = decltype(t);
      fill_values_kernel<T><<<grid_for(send_count), 256, 0, ctx.compute>>>(
          static_cast<T*>(send_), send_count, seed, static_cast<uint64_t>(ctx.rank), Fill::SmallIntegers);
    });
    TANDEM_CUDA_CHECK_LAUNCH();
    ctx.wait(ctx.compute, std::string(name()) + " setup");
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
      count_mismatches_kernel<T, Expected><<<grid_for(recv_count_), 256, 0, ctx.compute>>>(
          static_cast<const T*>(recv_), recv_count_, expected, wrong_);
    });
    TANDEM_CUDA_CHECK_LAUNCH();
    unsigned long long wrong = 0;
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(&wrong, wrong_, sizeof(wrong), cudaMemcpyDeviceToHost, ctx.compute));
    ctx.wait(ctx.compute, std::string(name()) + " check");
    return static_cast<int64_t>(wrong);
  }

  size_t bytes_ = 0;
  DType dtype_ = DType::BF16;
  uint64_t seed_ = 0;
  int rank_ = 0, nranks_ = 1;
  size_t send_count_ = 0, recv_count_ = 0;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  RankContext* ctx_ = nullptr;  // the rank this collective runs on (set up by allocate())
  void* scratch_ = nullptr;  // copy-engine reductions only
  size_t scratch_count_ = 0;
  bool copy_engine_route_ = false;  // route_through_copy_engines(true) is in force
  unsigned long long* wrong_ = nullptr;

 private:
  struct Windows {
    ncclComm_t comm;
    ncclWindow_t send, recv, scratch;
  };
  std::vector<Windows> windows_;
};

// Sum over ranks of the value every rank holds at `index`.
__device__ inline float sum_over_ranks(uint64_t seed, int nranks, size_t index) {
  float sum = 0;
  for (int r = 0; r < nranks; ++r) sum += small_integer(seed, r, index);
  return sum;
}

}  // namespace tandem::bench
