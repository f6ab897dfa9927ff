// Memory-bound STREAM triad a = b + s*c: short blocks, many waves, 8 blocks per SM on Hopper. It
// competes with the collective for HBM bandwidth as well as for SM slots.
#include "harness/values.cuh"
#include "harness/workload.h"
#include "tandem/cuda_check.h"

namespace tandem::bench {
namespace {

constexpr int kThreads = 256;
constexpr int kVectorsPerThread = 2;  // 16-byte vectors per thread per array
constexpr float kScale = 3.0f;

template <class T>
__device__ __forceinline__ T triad(T b, T c) {
  return from_float<T>(fmaf(kScale, to_float(c), to_float(b)));
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    stream_triad_kernel(T* __restrict__ a, const T* __restrict__ b, const T* __restrict__ c, size_t vectors) {
  constexpr int kPerVector = 16 / sizeof(T);
  const size_t first = (blockIdx.x * size_t(kThreads) * kVectorsPerThread) + threadIdx.x;
#pragma unroll
  for (int v = 0; v < kVectorsPerThread; ++v) {
    const size_t i = first + size_t(v) * kThreads;
    if (i >= vectors) return;
    const uint4 bv = reinterpret_cast<const uint4*>(b)[i];
    const uint4 cv = reinterpret_cast<const uint4*>(c)[i];
    uint4 av;
    const T* be = reinterpret_cast<const T*>(&bv);
    const T* ce = reinterpret_cast<const T*>(&cv);
    T* ae = reinterpret_cast<T*>(&av);
#pragma unroll
    for (int e = 0; e < kPerVector; ++e) ae[e] = triad(be[e], ce[e]);
    reinterpret_cast<uint4*>(a)[i] = av;
  }
}

template <class T>
__global__ void count_triad_mismatches_kernel(const T* a, size_t n, uint64_t seed, unsigned long long* wrong) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const T b = from_float<T>(uniform_pm1(seed, 101, i));
    const T c = from_float<T>(uniform_pm1(seed, 102, i));
    if (!(to_float(a[i]) == to_float(triad(b, c)))) ++local;
  }
  if (local) atomicAdd(wrong, local);
}

class StreamTriad final : public Workload {
 public:
  explicit StreamTriad(const WorkloadOptions& o) : options_(o) {
    if (!options_.stream_bytes) options_.stream_bytes = 256ll << 20;
    if (options_.stream_bytes % (kThreads * 16) != 0)
      TANDEM_THROW("stream: --stream-bytes must be a multiple of " + std::to_string(kThreads * 16) + " B (got " +
                   std::to_string(options_.stream_bytes) + ")");
  }
  ~StreamTriad() override {
    cudaFree(a_);
    cudaFree(b_);
    cudaFree(c_);
    cudaFree(wrong_);
  }

  std::string describe() const override {
    return "stream " + std::string(to_string(options_.dtype)) + " triad, 3 x " +
           std::to_string(options_.stream_bytes >> 20) + " MiB arrays";
  }

  void setup(RankContext& ctx) override {
    const size_t bytes = static_cast<size_t>(options_.stream_bytes);
    count_ = bytes / dtype_size(options_.dtype);
    vectors_ = bytes / 16;
    TANDEM_CUDA_CHECK(cudaMalloc(&a_, bytes));
    TANDEM_CUDA_CHECK(cudaMalloc(&b_, bytes));
    TANDEM_CUDA_CHECK(cudaMalloc(&c_, bytes));
    TANDEM_CUDA_CHECK(cudaMalloc(&wrong_, sizeof(unsigned long long)));
    dispatch_dtype(options_.dtype, [&](auto t) {
      using T = decltype(t);
      fill_values_kernel<T><<<grid_for(count_), 256, 0, ctx.compute>>>(static_cast<T*>(b_), count_, options_.seed, 101,
                                                                       Fill::UniformPm1);
      fill_values_kernel<T><<<grid_for(count_), 256, 0, ctx.compute>>>(static_cast<T*>(c_), count_, options_.seed, 102,
                                                                       Fill::UniformPm1);
      TANDEM_CUDA_CHECK_LAUNCH();
      kernel_ = std::make_unique<ShapedKernel>(reinterpret_cast<const void*>(&stream_triad_kernel<T>),
                                               "stream_triad_kernel", kThreads);
    });
    ctx.wait(ctx.compute, "stream setup");
  }

  void enqueue(cudaStream_t stream) override {
    void* args[] = {&a_, &b_, &c_, &vectors_};
    const size_t per_block = size_t(kThreads) * kVectorsPerThread;
    kernel_->launch(dim3(static_cast<unsigned>((vectors_ + per_block - 1) / per_block)), args, stream);
  }

  ShapedKernel* shaped_kernel() override { return kernel_.get(); }

  void poison_output(cudaStream_t stream) override { poison(a_, options_.dtype, count_, stream); }

  int64_t count_wrong(RankContext& ctx) override {
    TANDEM_CUDA_CHECK(cudaMemsetAsync(wrong_, 0, sizeof(unsigned long long), ctx.compute));
    dispatch_dtype(options_.dtype, [&](auto t) {
      using T = decltype(t);
      count_triad_mismatches_kernel<T>
          <<<grid_for(count_), 256, 0, ctx.compute>>>(static_cast<const T*>(a_), count_, options_.seed, wrong_);
    });
    TANDEM_CUDA_CHECK_LAUNCH();
    unsigned long long host = 0;
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(&host, wrong_, sizeof(host), cudaMemcpyDeviceToHost, ctx.compute));
    ctx.wait(ctx.compute, "stream check");
    return static_cast<int64_t>(host);
  }

  double hbm_bytes() const override { return 3.0 * static_cast<double>(options_.stream_bytes); }

 private:
  WorkloadOptions options_;
  std::unique_ptr<ShapedKernel> kernel_;
  size_t count_ = 0;
  size_t vectors_ = 0;
  void* a_ = nullptr;
  void* b_ = nullptr;
  void* c_ = nullptr;
  unsigned long long* wrong_ = nullptr;
};

}  // namespace

std::unique_ptr<Workload> make_stream_workload(const WorkloadOptions& o) { return std::make_unique<StreamTriad>(o); }

}  // namespace tandem::bench
