// cublasCreate_v2, cublasSetStream_v2 and cublasLtMatmulDescCreate: the `sm-target:N` control. cuBLAS on
// Hopper runs persistent GEMMs at one CTA per SM, which shaping cannot touch; capping the SMs a GEMM
// uses leaves whole SMs to NCCL. The cap is set through cuBLAS's own API right after the real function
// ran, so cuBLAS picks kernels for the smaller SM count: under compute-always on every new handle and
// matmul descriptor; under the targeted form (the default) on a handle at each cublasSetStream and on
// a new descriptor, N where the GEMM may run beside an NCCL kernel and 0 (every SM) where it may not.
//
// The setter functions are taken from the same library copy as the real creator (symbol_beside),
// never from another copy.
#include <atomic>
#include <optional>

#include "hook_handlers.h"
#include "log.h"
#include "runtime.h"
#include "tandem/sm_target.h"

namespace tandem::preload {
namespace {

using SetSmCountTarget = cublasStatus_t (*)(cublasHandle_t, int);

void note_cap(bool ok, std::atomic<uint64_t>& capped, const char* what, int target) {
  Counters::bump(ok ? capped : counters().cublas_cap_failures);
  if (!ok) log(LogLevel::Warn, "could not set SM-count target %d on a %s", target, what);
}

// The SM-count target a GEMM issued now should get: the policy's under compute-always; under the
// targeted form the policy's where it may run beside an NCCL kernel (outstanding_collectives.h), else
// none (0: every SM). `stream`: the handle's stream where known. nullopt when the policy sets none.
std::optional<int> target_now(Runtime& rt, std::optional<CUstream> stream) {
  const auto target = rt.config.sm_target();
  if (!target || !rt.config.targets_compute()) return target;
  const DriverApi* api = driver_api();
  const auto device = api && api->complete ? current_device(*api) : std::nullopt;
  return device && rt.outstanding.beside_collective(*api, *device, stream) ? *target : 0;
}

SetSmCountTarget set_sm_count_target_beside(Hook creator) {
  static std::atomic<void*> set_target{nullptr};
  return function_beside<SetSmCountTarget>(set_target, creator, "cublasSetSmCountTarget");
}

}  // namespace

cublasStatus_t handle_cublasCreate_v2(cublasHandle_t* handle) {
  Counters::bump(counters().calls_by_hook[index_of(Hook::cublasCreate_v2)]);
  const auto real = real_cublasCreate_v2();
  if (!real) return CUBLAS_STATUS_NOT_INITIALIZED;
  const cublasStatus_t status = real(handle);
  Runtime& rt = runtime();
  const auto target = target_now(rt, std::nullopt);
  if (status != CUBLAS_STATUS_SUCCESS || !target || *target == 0 || !handle) return status;
  const auto set = set_sm_count_target_beside(Hook::cublasCreate_v2);
  note_cap(set && set(*handle, *target) == CUBLAS_STATUS_SUCCESS, counters().cublas_handles_capped, "new cuBLAS handle",
           *target);
  return status;  // the handle exists either way; a failed cap must not fail the program
}

// The targeted form decides per GEMM here: PyTorch sets the handle's stream before each cuBLAS call
// (getCurrentCUDABlasHandle), so the target follows whether that GEMM may run beside communication.
cublasStatus_t handle_cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  Counters::bump(counters().calls_by_hook[index_of(Hook::cublasSetStream_v2)]);
  const auto real = real_cublasSetStream_v2();
  if (!real) return CUBLAS_STATUS_NOT_INITIALIZED;
  const cublasStatus_t status = real(handle, stream);
  Runtime& rt = runtime();
  if (status != CUBLAS_STATUS_SUCCESS || !handle || !rt.config.targets_compute() || !rt.config.sm_target())
    return status;
  const int target = target_now(rt, reinterpret_cast<CUstream>(stream)).value_or(0);
  const auto set = set_sm_count_target_beside(Hook::cublasSetStream_v2);
  Counters& count = counters();
  if (!set || set(handle, target) != CUBLAS_STATUS_SUCCESS)
    Counters::bump(count.cublas_cap_failures);
  else
    Counters::bump(target ? count.cublas_gemms_capped_beside : count.cublas_gemms_left_alone);
  return status;
}

cublasStatus_t handle_cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmul_desc, cublasComputeType_t compute_type,
                                               cudaDataType_t scale_type) {
  Counters::bump(counters().calls_by_hook[index_of(Hook::cublasLtMatmulDescCreate)]);
  const auto real = real_cublasLtMatmulDescCreate();
  if (!real) return CUBLAS_STATUS_NOT_INITIALIZED;
  const cublasStatus_t status = real(matmul_desc, compute_type, scale_type);
  Runtime& rt = runtime();
  const auto target = target_now(rt, std::nullopt);
  if (status != CUBLAS_STATUS_SUCCESS || !target || !matmul_desc) return status;
  if (*target == 0) {
    Counters::bump(counters().cublaslt_descriptors_left_alone);
    return status;
  }
  static std::atomic<void*> set_attribute{nullptr};
  const auto set = function_beside<MatmulDescSetAttribute>(set_attribute, Hook::cublasLtMatmulDescCreate,
                                                           "cublasLtMatmulDescSetAttribute");
  note_cap(set && set_sm_count_target(*matmul_desc, *target, set) == CUBLAS_STATUS_SUCCESS,
           counters().cublaslt_descriptors_capped, "new cuBLASLt matmul descriptor", *target);
  return status;
}

}  // namespace tandem::preload
