#include "tandem/cuda_check.h"

// throw_cublas is in cublas_check.cpp: what links only the NCCL-side controls needs no cuBLASLt.
// The HIP build has the runtime's check only: no driver API calls, no NCCL (docs/AMD.md).
#if !defined(TANDEM_HIP)
#include "tandem/library_checks.h"
#include "tandem/nccl_check.h"
#endif

namespace tandem::detail {

void throw_cuda(cudaError_t err, const char* expr, const char* file, int line) {
  throw_error(file, line, std::string(expr) + " failed: " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

#if !defined(TANDEM_HIP)
void throw_cu(CUresult err, const char* expr, const char* file, int line) {
  // cuGetErrorName is itself a driver call; the runtime's names cover the same codes.
  throw_error(file, line,
              std::string(expr) + " failed: CUresult " + std::to_string(static_cast<int>(err)) + " (" +
                  cudaGetErrorString(static_cast<cudaError_t>(err)) + ")");
}

void throw_nccl(ncclResult_t err, ncclComm_t comm, const char* expr, const char* file, int line) {
  std::string what = std::string(expr) + " failed: " + ncclGetErrorString(err);
  const char* last = ncclGetLastError(comm);
  if (last && *last) what += std::string(" (") + last + ")";
  throw_error(file, line, what);
}

#endif

}  // namespace tandem::detail
