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
    for (const Allocation& a : allocations_) ncclMemFree(a.ptr);
    if (scratch_) ncclMemFree(scratch_);
    cudaFree(wrong_);
  }

  // Every allocation becomes one window; in place, the one buffer covers both ranges, and NCCL finds
  // the window that contains each pointer.
  void use_symmetric_windows(RankContext& ctx, ncclComm_t comm) override {
    for (const auto& w : windows_)
      if (w.comm == comm) return;
    Windows w{comm, {}};
    auto add = [&](void* ptr, size_t bytes, const char* what) {
      ncclWindow_t handle = nullptr;
      TANDEM_NCCL_CHECK(comm, ncclCommWindowRegister(comm, ptr, bytes, &handle, NCCL_WIN_COLL_SYMMETRIC));
      ctx.await_communicator(comm, std::string(name()) + " " + what + " window");
      w.handles.push_back(handle);
    };
    for (const Allocation& a : allocations_) add(a.ptr, a.bytes, "buffer");
    if (scratch_) add(scratch_, scratch_count_ * dtype_size(dtype_), "scratch");
    windows_.push_back(w);
  }

  void release_windows(RankContext& ctx) override {
    for (const auto& w : windows_) {
      for (ncclWindow_t handle : w.handles) {
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
    // In place the input shares the output's memory: the poison hit it too, and the run needs it.
    if (in_place_) fill_input(stream);
  }

 protected:
  // Send and receive counts are in elements; `bytes` was validated by check_divisible(). `in_place`
  // allocates the larger buffer only and puts the smaller one inside it where NCCL's in-place forms
  // expect it: at the same address when the counts are equal (all-reduce), else as this rank's chunk
  // (all-gather: send = recv + rank x send_count; reduce-scatter: recv = send + rank x recv_count).
  void allocate(RankContext& ctx, size_t bytes, DType dtype, uint64_t seed, size_t send_count, size_t recv_count,
                bool in_place) {
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
    in_place_ = in_place;
    auto allocate_buffer = [&](size_t count) {
      void* ptr = nullptr;
      TANDEM_NCCL_CHECK(nullptr, ncclMemAlloc(&ptr, count * elem));
      allocations_.push_back({ptr, count * elem});
      return static_cast<char*>(ptr);
    };
    if (!in_place) {
      send_ = allocate_buffer(send_count);
      recv_ = allocate_buffer(recv_count);
    } else if (send_count == recv_count) {
      send_ = recv_ = allocate_buffer(send_count);
    } else if (send_count > recv_count) {
      send_ = allocate_buffer(send_count);
      recv_ = static_cast<char*>(send_) + size_t(rank_) * recv_count * elem;
    } else {
      recv_ = allocate_buffer(recv_count);
      send_ = static_cast<char*>(recv_) + size_t(rank_) * send_count * elem;
    }
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
  const CopyEngineLanes* lanes_ = nullptr;  // route_through_copy_engines(lanes) is in force
  bool in_place_ = false;
  unsigned long long* wrong_ = nullptr;

 private:
  struct Allocation {
    void* ptr;
    size_t bytes;
  };
  std::vector<Allocation> allocations_;  // send_ and recv_, or the one buffer both lie in
  struct Windows {
    ncclComm_t comm;
    std::vector<ncclWindow_t> handles;
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
