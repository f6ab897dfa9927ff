// TANDEM_CUBLAS_CHECK's failure (tandem/cuda_check.h), apart from the other checks: the only code
// of cuda_check that needs cuBLASLt, so that the NCCL-side controls link without it (src/CMakeLists.txt).
#include <cublas_api.h>

#include "tandem/cuda_check.h"

namespace tandem::detail {

void throw_cublas(cublasStatus_t err, const char* expr, const char* file, int line) {
  throw_error(file, line,
              std::string(expr) + " failed: " + cublasLtGetStatusName(err) + ": " + cublasLtGetStatusString(err));
}

}  // namespace tandem::detail
