// cuBLASLt GEMM. On Hopper cuBLASLt picks persistent kernels that put one CTA on every SM and keep
// it there, so there is nothing for shared-memory shaping to act on: only an SM-count cap or the
// launch order can make room for a collective. The GEMM is the scenarios' operation (scenarios/gemm_op.h):
// the same descriptor, heuristic, workspace and SM-count target handling.
#include <memory>

#include "harness/workload.h"
#include "scenarios/gemm_op.h"
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

  std::string describe() const override {
    return "gemm " + std::string(to_string(options_.dtype)) + " m=" + std::to_string(options_.m) +
           " n=" + std::to_string(options_.n) + " k=" + std::to_string(options_.k) + " (cuBLASLt)";
  }

  void setup(RankContext& ctx) override {
    buffers_.allocate_and_fill(ctx, options_.dtype, options_.m, options_.n, options_.k, options_.seed);
    gemm_ = std::make_unique<scenarios::GemmOp>(ctx, options_.dtype, buffers_.dims(), scenarios::GemmBackend::CublasLt);
  }

  bool set_sm_count_target(int sm_count) override {
    gemm_->set_sm_count_target(sm_count);
    return true;
  }

  void enqueue(cudaStream_t stream) override { gemm_->run(buffers_.a, buffers_.b, buffers_.c, 1.0f, 0.0f, stream); }

  std::string not_shapeable_reason() const override {
    return "cuBLASLt's GEMM kernels are closed and run one persistent CTA per SM; use an SM-count cap or comm-first";
  }
  void poison_output(cudaStream_t stream) override { buffers_.poison(stream); }
  int64_t count_wrong(RankContext& ctx) override { return buffers_.count_wrong(ctx); }
  double hbm_bytes() const override { return buffers_.hbm_bytes(); }

 private:
  WorkloadOptions options_;
  GemmBuffers buffers_;
  std::unique_ptr<scenarios::GemmOp> gemm_;
};

}  // namespace

std::unique_ptr<Workload> make_gemm_workload(const WorkloadOptions& o) { return std::make_unique<CublasLtGemm>(o); }

}  // namespace tandem::bench
