// Uses the CUDA part: without a GPU it must fail with tandem's own message, not crash or fail to
// load (the consumer chose the CUDA runtime). tandem/cuda_check.h brings the CUDA runtime's header
// and no other: a consumer sees neither the driver's nor cuBLASLt's unless it asks for them.
#include <cstdio>

#include "tandem/cuda_check.h"
#include "tandem/device.h"
#include "tandem/error.h"

#if defined(__cuda_cuda_h__) || defined(CUBLAS_VER_MAJOR)
#error "an installed tandem header pulled in cuda.h or cuBLAS's headers"
#endif

int main() {
  try {
    int runtime = 0;
    TANDEM_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    std::printf("gpus=%d\n", tandem::visible_gpu_count());
  } catch (const tandem::Error& e) {
    std::printf("no gpu: %s\n", e.what());
  }
  return 0;
}
