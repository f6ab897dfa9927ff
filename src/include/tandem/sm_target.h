#pragma once
// sm-target:N applied to a cuBLASLt matmul descriptor, the one way the interposer (on the program's
// descriptors) and the benchmark (on its own) set it: CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, after
// which cuBLASLt picks kernels and grids for that many SMs (0 removes the cap). How many SMs a
// policy leaves a GEMM on a device is tandem::sm_target_on (tandem/policy.h), which tandem.torch's
// carveout reads too. Header-only: the interposer passes the setter of the program's own cuBLASLt
// and links none.
#include <cublasLt.h>

#include <cstdint>

namespace tandem {

using MatmulDescSetAttribute = cublasStatus_t (*)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, const void*,
                                                  size_t);

inline cublasStatus_t set_sm_count_target(cublasLtMatmulDesc_t desc, int sm_count, MatmulDescSetAttribute set) {
  const int32_t value = sm_count;
  return set(desc, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &value, sizeof value);
}

}  // namespace tandem
