#pragma once
// Row-major GEMMs with optional transposes for the scenarios: C[m x n] = alpha op(A) op(B) + beta C,
// op(A) [m x k] (A stored [k x m] when trans_a), op(B) [k x n] (B stored [n x k] when trans_b),
// fp32 accumulation, output rounded to the element type.
//
// A batch of same-shape GEMMs (GemmDims::batch) runs as one strided-batched launch.
//
// Two backends with the same semantics: cuBLASLt (what is timed: algorithm chosen once by the
// heuristic) and a deliberately naive fp32 kernel (one thread per output, k in order), the
// independent reference results are checked against. The `gemm` workload (workloads/gemm.cu) is one
// GemmOp too, and reference_gemm_fp32 is the reference of every GEMM workload.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <tuple>

#include "harness/rank_context.h"
#include "scenarios/model_shapes.h"
#include "tandem/dtype.h"

namespace tandem::bench::scenarios {

enum class GemmBackend { CublasLt, Reference };

class GemmOp {
 public:
  GemmOp(RankContext& ctx, DType dtype, const GemmDims& dims, GemmBackend backend);
  ~GemmOp();
  GemmOp(const GemmOp&) = delete;
  GemmOp& operator=(const GemmOp&) = delete;

  // cuBLASLt backend: caps the SMs the GEMM uses (0: no cap) and runs the heuristic again, so it
  // picks a kernel and grid for that many SMs.
  void set_sm_count_target(int sm_count);
  // With beta == 0, C is not read (it may hold NaN poison).
  void run(const void* a, const void* b, void* c, float alpha, float beta, cudaStream_t stream) const;

  GemmBackend backend() const { return backend_; }
  // Elements of A, B and C as stored, over the whole batch.
  int64_t a_elements() const { return dims_.m * dims_.k * dims_.batch; }
  int64_t b_elements() const { return dims_.k * dims_.n * dims_.batch; }
  int64_t c_elements() const { return dims_.m * dims_.n * dims_.batch; }

 private:
  RankContext& ctx_;
  DType dtype_;
  GemmDims dims_;
  GemmBackend backend_;
  void select_algorithm();
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t layout_first_ = nullptr, layout_second_ = nullptr, layout_c_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

// The naive kernel with alpha 1, beta 0 and an fp32 output: the unrounded reference the GEMM
// workloads' outputs are compared with (workloads/gemm_reference.cuh).
void reference_gemm_fp32(DType dtype, const GemmDims& dims, const void* a, const void* b, float* c,
                         cudaStream_t stream);

// GEMM operations by shape, created once (the heuristic runs at build time, never while timing).
// The reference engine uses the naive kernel up to `naive_limit` multiply-adds per GEMM and
// cuBLASLt above (a naive 8192-wide GEMM takes seconds); reference_used_cublas() says whether it
// had to.
class GemmEngine {
 public:
  GemmEngine(RankContext& ctx, DType dtype, bool reference, double naive_limit = double(1ull << 32));
  const GemmOp& get(const GemmDims& dims);
  bool reference_used_cublas() const { return reference_used_cublas_; }
  // Applies to every cuBLASLt GEMM created so far; returns false when there is none.
  bool set_sm_count_target(int sm_count);

 private:
  RankContext& ctx_;
  DType dtype_;
  bool reference_;
  double naive_limit_;
  bool reference_used_cublas_ = false;
  std::map<std::tuple<int64_t, int64_t, int64_t, bool, bool, int64_t>, std::unique_ptr<GemmOp>> ops_;
};

}  // namespace tandem::bench::scenarios
