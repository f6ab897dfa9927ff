// cuBLASLt GEMM. On Hopper cuBLASLt picks persistent kernels that put one CTA on every SM and keep
// it there, so there is nothing for shared-memory shaping to act on: only an SM-count cap or the
// launch order can make room for a collective.
#include "harness/workload.h"
#include "tandem/cuda_check.h"
#include "workloads/gemm_reference.cuh"

namespace tandem::bench {
namespace {

class CublasLtGemm final : public Workload {
 public:
  explicit CublasLtGemm(const WorkloadOptions& o) : options_(o) {
    if (!options_.m) options_.m = 8192;
    if (!options_.n) options_.n = 8192;
    if (!options_.k) options_.k = 8192;
  }
  ~CublasLtGemm() override {
    if (layout_a_) cublasLtMatrixLayoutDestroy(layout_a_);
    if (layout_b_) cublasLtMatrixLayoutDestroy(layout_b_);
    if (layout_c_) cublasLtMatrixLayoutDestroy(layout_c_);
    if (desc_) cublasLtMatmulDescDestroy(desc_);
  }

  std::string describe() const override {
    return "gemm " + std::string(to_string(options_.dtype)) + " m=" + std::to_string(options_.m) +
           " n=" + std::to_string(options_.n) + " k=" + std::to_string(options_.k) + " (cuBLASLt)";
  }

  void setup(RankContext& ctx) override {
    ctx_ = &ctx;
    buffers_.allocate_and_fill(ctx, options_.dtype, options_.m, options_.n, options_.k, options_.seed);
    const cudaDataType_t type = to_cuda(options_.dtype);
    TANDEM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    // cuBLASLt is column-major: the row-major C = A.B is the column-major C^T = B^T.A^T, so B's
    // buffer is the first operand (n x k, ld n) and A's the second (k x m, ld k).
    const auto m = static_cast<uint64_t>(options_.m), n = static_cast<uint64_t>(options_.n),
               k = static_cast<uint64_t>(options_.k);
    TANDEM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_b_, type, n, k, n));
    TANDEM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_a_, type, k, m, k));
    TANDEM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_c_, type, n, m, n));
    select_algorithm();
  }

  // An SM-count target is a matmul-descriptor attribute; the heuristic must run again so it picks
  // a kernel and grid for that many SMs.
  bool set_sm_count_target(int sm_count) override {
    const int32_t target = sm_count;
    TANDEM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &target,
                                                       sizeof(target)));
    select_algorithm();
    return true;
  }

  void enqueue(cudaStream_t stream) override {
    const float alpha = 1.0f, beta = 0.0f;
    TANDEM_CUBLAS_CHECK(cublasLtMatmul(ctx_->cublaslt, desc_, &alpha, buffers_.b, layout_b_, buffers_.a, layout_a_,
                                       &beta, buffers_.c, layout_c_, buffers_.c, layout_c_, &algo_,
                                       ctx_->cublaslt_workspace, ctx_->cublaslt_workspace_bytes, stream));
  }

  void select_algorithm() {
    cublasLtMatmulPreference_t pref = nullptr;
    TANDEM_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const cublasStatus_t set = cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ctx_->cublaslt_workspace_bytes,
        sizeof(ctx_->cublaslt_workspace_bytes));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status =
        set != CUBLAS_STATUS_SUCCESS ? set
                                     : cublasLtMatmulAlgoGetHeuristic(ctx_->cublaslt, desc_, layout_b_, layout_a_,
                                                                      layout_c_, layout_c_, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    TANDEM_CUBLAS_CHECK(status);
    TANDEM_REQUIRE(found > 0, "cuBLASLt found no algorithm for " + describe());
    algo_ = result.algo;
  }

  std::string not_shapeable_reason() const override {
    return "cuBLASLt's GEMM kernels are closed and run one persistent CTA per SM; use an SM-count cap or comm-first";
  }
  void poison_output(cudaStream_t stream) override { buffers_.poison(stream); }
  int64_t count_wrong(RankContext& ctx) override { return buffers_.count_wrong(ctx); }
  double hbm_bytes() const override { return buffers_.hbm_bytes(); }
  double flops() const override { return buffers_.flops(); }

 private:
  WorkloadOptions options_;
  RankContext* ctx_ = nullptr;
  GemmBuffers buffers_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t layout_a_ = nullptr, layout_b_ = nullptr, layout_c_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

}  // namespace

std::unique_ptr<Workload> make_gemm_workload(const WorkloadOptions& o) { return std::make_unique<CublasLtGemm>(o); }

}  // namespace tandem::bench
