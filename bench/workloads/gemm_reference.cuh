#pragma once
// The check of every GEMM workload against one reference: the naive fp32 kernel of
// scenarios/gemm_op.h (one thread per output, k in order), independent of the kernels under test.
// Matrices are row-major: C[m][n] = sum_k A[m][k] * B[k][n].
#include <cmath>

#include "harness/rank_context.h"
#include "harness/values.cuh"
#include "scenarios/gemm_op.h"
#include "scenarios/kernels.h"
#include "tandem/cuda_check.h"
#include "tandem/dtype.h"

namespace tandem::bench {

// Operands, output and reference of a row-major GEMM, filled and checked on the rank's device.
class GemmBuffers {
 public:
  ~GemmBuffers() {
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cudaFree(ref);
    cudaFree(wrong);
  }

  void allocate_and_fill(RankContext& ctx, DType dt, int64_t m_, int64_t n_, int64_t k_, uint64_t seed) {
    dtype = dt;
    m = m_;
    n = n_;
    k = k_;
    const size_t e = dtype_size(dtype);
    TANDEM_CUDA_CHECK(cudaMalloc(&a, size_t(m * k) * e));
    TANDEM_CUDA_CHECK(cudaMalloc(&b, size_t(k * n) * e));
    TANDEM_CUDA_CHECK(cudaMalloc(&c, size_t(m * n) * e));
    TANDEM_CUDA_CHECK(cudaMalloc(&ref, size_t(m * n) * sizeof(float)));
    TANDEM_CUDA_CHECK(cudaMalloc(&wrong, sizeof(unsigned long long)));
    dispatch_dtype(dtype, [&](auto t) {
      using T = decltype(t);
      // Operands differ per rank, as gradients or activations would.
      fill_values_kernel<T><<<grid_for(size_t(m * k)), 256, 0, ctx.compute>>>(static_cast<T*>(a), size_t(m * k), seed,
                                                                              2 * ctx.rank, Fill::UniformPm1);
      fill_values_kernel<T><<<grid_for(size_t(k * n)), 256, 0, ctx.compute>>>(static_cast<T*>(b), size_t(k * n), seed,
                                                                              2 * ctx.rank + 1, Fill::UniformPm1);
      TANDEM_CUDA_CHECK_LAUNCH();
    });
    scenarios::reference_gemm_fp32(dtype, dims(), a, b, ref, ctx.compute);
    ctx.wait(ctx.compute, "GEMM reference");
  }

  void poison(cudaStream_t stream) { bench::poison(c, dtype, size_t(m * n), stream); }

  // |got - ref| must be within the output type's rounding of |ref| plus an accumulation-order
  // allowance that grows like the typical magnitude of a sum of k products of [-1, 1) values.
  int64_t count_wrong(RankContext& ctx) {
    const float rtol = dtype == DType::BF16 ? 1.0f / 128 : dtype == DType::FP16 ? 1.0f / 1024 : 1e-4f;
    const float atol = 1e-3f * std::sqrt(static_cast<float>(k));
    TANDEM_CUDA_CHECK(cudaMemsetAsync(wrong, 0, sizeof(unsigned long long), ctx.compute));
    scenarios::count_mismatches(wrong, c, dtype, ref, m * n, rtol, atol, ctx.compute);
    unsigned long long host = 0;
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(&host, wrong, sizeof(host), cudaMemcpyDeviceToHost, ctx.compute));
    ctx.wait(ctx.compute, "GEMM check");
    return static_cast<int64_t>(host);
  }

  scenarios::GemmDims dims() const { return {"gemm", m, n, k}; }
  double hbm_bytes() const { return double(m * k + k * n + m * n) * dtype_size(dtype); }

  DType dtype = DType::BF16;
  int64_t m = 0, n = 0, k = 0;
  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
  float* ref = nullptr;
  unsigned long long* wrong = nullptr;
};

}  // namespace tandem::bench
