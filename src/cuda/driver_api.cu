#include <cuda_runtime.h>

#include <string>

#include "tandem/cuda_check.h"
#include "tandem/driver_api.h"

namespace tandem::driver {

void* entry_point(const char* symbol, unsigned version) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status{};
  TANDEM_CUDA_CHECK(cudaGetDriverEntryPointByVersion(symbol, &fn, version, cudaEnableDefault, &status));
  if (status != cudaDriverEntryPointSuccess || fn == nullptr)
    TANDEM_THROW(std::string("driver entry point ") + symbol + " (CUDA " + std::to_string(version) +
                 ") is not available from this driver");
  return fn;
}

}  // namespace tandem::driver
