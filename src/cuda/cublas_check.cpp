// TANDEM_CUBLAS_CHECK's failure (tandem/library_checks.h), apart from the other checks: the only code
// of the checks that needs cuBLASLt, so that the NCCL-side controls link without it (src/CMakeLists.txt).
#include "tandem/library_checks.h"

namespace tandem::detail {

void throw_cublas(cublasStatus_t err, const char* expr, const char* file, int line) {
  throw_error(file, line,
              std::string(expr) + " failed: " + cublasLtGetStatusName(err) + ": " + cublasLtGetStatusString(err));
}

}  // namespace tandem::detail
