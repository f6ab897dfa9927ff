// tandem's own SIMT tiled GEMM: 64x64 output tiles, 256 threads, several blocks resident per SM and
// many waves of blocks. Each block retiring frees a slot, so how the scheduler refills slots
// (priority) and how many blocks may share an SM (shaping) decide when NCCL's CTAs get in.
#include "harness/workload.h"
#include "tandem/cuda_check.h"
#include "workloads/gemm_reference.cuh"

namespace tandem::bench {
namespace {

constexpr int kTile = 64;      // output tile edge
constexpr int kTileK = 16;     // k-slice staged in shared memory per step
constexpr int kThreads = 256;  // 16 x 16 threads, each computing a 4 x 4 micro-tile
constexpr int kMicro = 4;

template <class T>
__global__ void __launch_bounds__(kThreads)
    tiled_gemm_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int m, int n, int k) {
  __shared__ float a_tile[kTileK][kTile];  // transposed: a_tile[kk][row]
  __shared__ float b_tile[kTileK][kTile];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;
  float acc[kMicro][kMicro] = {};
  for (int k0 = 0; k0 < k; k0 += kTileK) {
    for (int i = threadIdx.x; i < kTile * kTileK; i += kThreads) {
      const int r = i / kTileK, kk = i % kTileK;
      a_tile[kk][r] = to_float(a[size_t(row0 + r) * k + k0 + kk]);
      const int br = i / kTile, bc = i % kTile;
      b_tile[br][bc] = to_float(b[size_t(k0 + br) * n + col0 + bc]);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTileK; ++kk) {
      float av[kMicro], bv[kMicro];
#pragma unroll
      for (int i = 0; i < kMicro; ++i) av[i] = a_tile[kk][ty * kMicro + i];
#pragma unroll
      for (int j = 0; j < kMicro; ++j) bv[j] = b_tile[kk][tx * kMicro + j];
#pragma unroll
      for (int i = 0; i < kMicro; ++i)
#pragma unroll
        for (int j = 0; j < kMicro; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();  // the next step overwrites the tiles
  }
#pragma unroll
  for (int i = 0; i < kMicro; ++i)
#pragma unroll
    for (int j = 0; j < kMicro; ++j)
      c[size_t(row0 + ty * kMicro + i) * n + col0 + tx * kMicro + j] = from_float<T>(acc[i][j]);
}

class TiledGemm final : public Workload {
 public:
  explicit TiledGemm(const WorkloadOptions& o) : options_(o) {
    if (!options_.m) options_.m = 4096;
    if (!options_.n) options_.n = 4096;
    if (!options_.k) options_.k = 512;
    if (options_.m % kTile || options_.n % kTile || options_.k % kTileK)
      TANDEM_THROW("tiled-gemm needs m and n divisible by " + std::to_string(kTile) + " and k by " +
                   std::to_string(kTileK) + " (got m=" + std::to_string(options_.m) +
                   " n=" + std::to_string(options_.n) + " k=" + std::to_string(options_.k) + ")");
  }

  std::string describe() const override {
    return "tiled-gemm " + std::string(to_string(options_.dtype)) + " m=" + std::to_string(options_.m) +
           " n=" + std::to_string(options_.n) + " k=" + std::to_string(options_.k) + " (SIMT, 64x64 tiles)";
  }

  void setup(RankContext& ctx) override {
    buffers_.allocate_and_fill(ctx, options_.dtype, options_.m, options_.n, options_.k, options_.seed);
    dispatch_dtype(options_.dtype, [&](auto t) {
      using T = decltype(t);
      kernel_ = std::make_unique<ShapedKernel>(reinterpret_cast<const void*>(&tiled_gemm_kernel<T>),
                                               "tiled_gemm_kernel", kThreads);
    });
    m_ = static_cast<int>(options_.m);
    n_ = static_cast<int>(options_.n);
    k_ = static_cast<int>(options_.k);
  }

  void enqueue(cudaStream_t stream) override {
    void* args[] = {&buffers_.a, &buffers_.b, &buffers_.c, &m_, &n_, &k_};
    kernel_->launch(dim3(n_ / kTile, m_ / kTile), args, stream);
  }

  ShapedKernel* shaped_kernel() override { return kernel_.get(); }
  void poison_output(cudaStream_t stream) override { buffers_.poison(stream); }
  int64_t count_wrong(RankContext& ctx) override { return buffers_.count_wrong(ctx); }
  double hbm_bytes() const override { return buffers_.hbm_bytes(); }

 private:
  WorkloadOptions options_;
  GemmBuffers buffers_;
  std::unique_ptr<ShapedKernel> kernel_;
  int m_ = 0, n_ = 0, k_ = 0;
};

}  // namespace

std::unique_ptr<Workload> make_tiled_gemm_workload(const WorkloadOptions& o) { return std::make_unique<TiledGemm>(o); }

}  // namespace tandem::bench
