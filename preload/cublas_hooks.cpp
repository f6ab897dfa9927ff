// cublasCreate_v2 and cublasLtMatmulDescCreate: the `sm-target:N` control. cuBLAS on Hopper runs
// persistent GEMMs at one CTA per SM, which shaping cannot touch; capping the SMs a GEMM uses leaves
// whole SMs to NCCL. The cap is set on each new handle / matmul descriptor right after the real
// function created it, through cuBLAS's own API, so cuBLAS picks kernels for the smaller SM count.
//
// The setter functions are taken from the same library copy as the real creator (symbol_beside),
// never from another copy.
#include <atomic>

#include "hook_handlers.h"
#include "log.h"
#include "runtime.h"
#include "tandem/sm_target.h"

namespace tandem::preload {
namespace {

void note_cap(bool ok, std::atomic<uint64_t>& capped, const char* what, int target) {
  Counters::bump(ok ? capped : counters().cublas_cap_failures);
  if (!ok) log(LogLevel::Warn, "could not set SM-count target %d on a new %s", target, what);
}

}  // namespace

cublasStatus_t handle_cublasCreate_v2(cublasHandle_t* handle) {
  Counters::bump(counters().calls_by_hook[index_of(Hook::cublasCreate_v2)]);
  const auto real = real_cublasCreate_v2();
  if (!real) return CUBLAS_STATUS_NOT_INITIALIZED;
  const cublasStatus_t status = real(handle);
  const auto target = runtime().config.sm_target();
  if (status != CUBLAS_STATUS_SUCCESS || !target || !handle) return status;
  static std::atomic<void*> set_target{nullptr};
  using SetSmCountTarget = cublasStatus_t (*)(cublasHandle_t, int);
  const auto set = function_beside<SetSmCountTarget>(set_target, Hook::cublasCreate_v2, "cublasSetSmCountTarget");
  note_cap(set && set(*handle, *target) == CUBLAS_STATUS_SUCCESS, counters().cublas_handles_capped, "cuBLAS handle",
           *target);
  return status;  // the handle exists either way; a failed cap must not fail the program
}

cublasStatus_t handle_cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmul_desc, cublasComputeType_t compute_type,
                                               cudaDataType_t scale_type) {
  Counters::bump(counters().calls_by_hook[index_of(Hook::cublasLtMatmulDescCreate)]);
  const auto real = real_cublasLtMatmulDescCreate();
  if (!real) return CUBLAS_STATUS_NOT_INITIALIZED;
  const cublasStatus_t status = real(matmul_desc, compute_type, scale_type);
  const auto target = runtime().config.sm_target();
  if (status != CUBLAS_STATUS_SUCCESS || !target || !matmul_desc) return status;
  static std::atomic<void*> set_attribute{nullptr};
  const auto set = function_beside<MatmulDescSetAttribute>(set_attribute, Hook::cublasLtMatmulDescCreate,
                                                           "cublasLtMatmulDescSetAttribute");
  note_cap(set && set_sm_count_target(*matmul_desc, *target, set) == CUBLAS_STATUS_SUCCESS,
           counters().cublaslt_descriptors_capped, "cuBLASLt matmul descriptor", *target);
  return status;
}

}  // namespace tandem::preload
