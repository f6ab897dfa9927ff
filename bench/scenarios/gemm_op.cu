#include <algorithm>

#include "harness/values.cuh"
#include "scenarios/gemm_op.h"
#include "tandem/cuda_check.h"
#include "tandem/library_checks.h"
#include "tandem/sm_target.h"

namespace tandem::bench::scenarios {

namespace {

// One thread per output element, k in order, fp32 accumulation: slow and obviously right. Rows
// loop over gridDim.y so any m fits the grid; blockIdx.z is the matrix of the batch. The output is
// the element type (a scenario's reference run) or fp32 (the workloads' reference, unrounded).
template <class T, class Out>
__global__ void naive_gemm_kernel(const T* a, const T* b, Out* c, int64_t m, int64_t n, int64_t k, bool trans_a,
                                  bool trans_b, float alpha, float beta) {
  const int64_t col = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (col >= n) return;
  a += blockIdx.z * m * k;
  b += blockIdx.z * k * n;
  c += blockIdx.z * m * n;
  for (int64_t row = blockIdx.y; row < m; row += gridDim.y) {
    float acc = 0;
    for (int64_t p = 0; p < k; ++p) {
      const float av = to_float(trans_a ? a[p * m + row] : a[row * k + p]);
      const float bv = to_float(trans_b ? b[col * k + p] : b[p * n + col]);
      acc = fmaf(av, bv, acc);
    }
    float out = alpha * acc;
    if (beta != 0.0f) out = fmaf(beta, to_float(c[row * n + col]), out);
    c[row * n + col] = from_float<Out>(out);
  }
}

template <class T, class Out>
void launch_naive_gemm(const GemmDims& dims, const T* a, const T* b, Out* c, float alpha, float beta,
                       cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((dims.n + 255) / 256), static_cast<unsigned>(std::min<int64_t>(dims.m, 65535)),
                  static_cast<unsigned>(dims.batch));
  naive_gemm_kernel<T, Out>
      <<<grid, 256, 0, stream>>>(a, b, c, dims.m, dims.n, dims.k, dims.trans_a, dims.trans_b, alpha, beta);
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace

void reference_gemm_fp32(DType dtype, const GemmDims& dims, const void* a, const void* b, float* c,
                         cudaStream_t stream) {
  dispatch_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    launch_naive_gemm<T, float>(dims, static_cast<const T*>(a), static_cast<const T*>(b), c, 1.0f, 0.0f, stream);
  });
}

GemmOp::GemmOp(RankContext& ctx, DType dtype, const GemmDims& dims, GemmBackend backend)
    : ctx_(ctx), dtype_(dtype), dims_(dims), backend_(backend) {
  TANDEM_REQUIRE(dims.m > 0 && dims.n > 0 && dims.k > 0, "GEMM '" + dims.name + "' has an empty dimension");
  TANDEM_REQUIRE(dims.batch >= 1 && dims.batch <= 65535,
                 "GEMM '" + dims.name + "': batch " + std::to_string(dims.batch) + " is outside 1..65535");
  if (backend_ == GemmBackend::Reference) return;
  const cudaDataType_t type = to_cuda(dtype);
  TANDEM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  // cuBLASLt is column-major. Row-major C[m x n] is column-major C^T[n x m] = op(B)^T . op(A)^T, so
  // B's buffer is the first operand and A's the second. A row-major [r x c] buffer is a
  // column-major [c x r] one with leading dimension c; the transpose flags carry over unchanged.
  const auto m = static_cast<uint64_t>(dims.m), n = static_cast<uint64_t>(dims.n), k = static_cast<uint64_t>(dims.k);
  const cublasOperation_t op_first = dims.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = dims.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  TANDEM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof(op_first)));
  TANDEM_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof(op_second)));
  // A column-major layout of `rows` x `cols`, leading dimension `rows`.
  const auto create_layout = [&](cublasLtMatrixLayout_t* layout, uint64_t rows, uint64_t cols) {
    TANDEM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(layout, type, rows, cols, rows));
  };
  // B stored row-major [k x n] (column-major n x k, ld n) or, transposed, [n x k] (k x n, ld k).
  create_layout(&layout_first_, dims.trans_b ? k : n, dims.trans_b ? n : k);
  // A stored row-major [m x k] (column-major k x m, ld k) or, transposed, [k x m] (m x k, ld m).
  create_layout(&layout_second_, dims.trans_a ? m : k, dims.trans_a ? k : m);
  create_layout(&layout_c_, n, m);
  if (dims.batch > 1) {
    const int32_t count = static_cast<int32_t>(dims.batch);
    const auto set_batch = [&](cublasLtMatrixLayout_t layout, int64_t stride) {
      TANDEM_CUBLAS_CHECK(
          cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
      TANDEM_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                           sizeof(stride)));
    };
    set_batch(layout_first_, dims.k * dims.n);
    set_batch(layout_second_, dims.m * dims.k);
    set_batch(layout_c_, dims.m * dims.n);
  }
  select_algorithm();
}

void GemmOp::set_sm_count_target(int sm_count) {
  if (backend_ != GemmBackend::CublasLt) return;
  TANDEM_CUBLAS_CHECK(tandem::set_sm_count_target(desc_, sm_count, &cublasLtMatmulDescSetAttribute));
  select_algorithm();
}

void GemmOp::select_algorithm() {
  const GemmDims& dims = dims_;
  RankContext& ctx = ctx_;
  cublasLtMatmulPreference_t pref = nullptr;
  TANDEM_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const cublasStatus_t set =
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                           &ctx.cublaslt_workspace_bytes, sizeof(ctx.cublaslt_workspace_bytes));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status = set != CUBLAS_STATUS_SUCCESS
                                    ? set
                                    : cublasLtMatmulAlgoGetHeuristic(ctx.cublaslt, desc_, layout_first_, layout_second_,
                                                                     layout_c_, layout_c_, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  TANDEM_CUBLAS_CHECK(status);
  TANDEM_REQUIRE(found > 0, "cuBLASLt found no algorithm for GEMM '" + dims.name + "' m=" + std::to_string(dims.m) +
                                " n=" + std::to_string(dims.n) + " k=" + std::to_string(dims.k));
  algo_ = result.algo;
}

GemmOp::~GemmOp() {
  if (layout_first_) cublasLtMatrixLayoutDestroy(layout_first_);
  if (layout_second_) cublasLtMatrixLayoutDestroy(layout_second_);
  if (layout_c_) cublasLtMatrixLayoutDestroy(layout_c_);
  if (desc_) cublasLtMatmulDescDestroy(desc_);
}

void GemmOp::run(const void* a, const void* b, void* c, float alpha, float beta, cudaStream_t stream) const {
  if (backend_ == GemmBackend::Reference) {
    dispatch_dtype(dtype_, [&](auto t) {
      using T = decltype(t);
      launch_naive_gemm<T>(dims_, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(c), alpha, beta,
                           stream);
    });
    return;
  }
  TANDEM_CUBLAS_CHECK(cublasLtMatmul(ctx_.cublaslt, desc_, &alpha, b, layout_first_, a, layout_second_, &beta, c,
                                     layout_c_, c, layout_c_, &algo_, ctx_.cublaslt_workspace,
                                     ctx_.cublaslt_workspace_bytes, stream));
}

GemmEngine::GemmEngine(RankContext& ctx, DType dtype, bool reference, double naive_limit)
    : ctx_(ctx), dtype_(dtype), reference_(reference), naive_limit_(naive_limit) {}

bool GemmEngine::set_sm_count_target(int sm_count) {
  bool any = false;
  for (auto& entry : ops_)
    if (entry.second->backend() == GemmBackend::CublasLt) {
      entry.second->set_sm_count_target(sm_count);
      any = true;
    }
  return any;
}

const GemmOp& GemmEngine::get(const GemmDims& dims) {
  const auto key = std::make_tuple(dims.m, dims.n, dims.k, dims.trans_a, dims.trans_b, dims.batch);
  auto it = ops_.find(key);
  if (it != ops_.end()) return *it->second;
  GemmBackend backend = GemmBackend::CublasLt;
  if (reference_) {
    if (double(dims.m) * double(dims.n) * double(dims.k) * double(dims.batch) <= naive_limit_)
      backend = GemmBackend::Reference;
    else
      reference_used_cublas_ = true;
  }
  auto op = std::make_unique<GemmOp>(ctx_, dtype_, dims, backend);
  const GemmOp& out = *op;
  ops_.emplace(key, std::move(op));
  return out;
}

}  // namespace tandem::bench::scenarios
