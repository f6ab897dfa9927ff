// Compiled with --default-stream per-thread: here stream 0 is the calling thread's default stream,
// so the CUDA runtime launches through cuLaunchKernel_ptsz (or cuLaunchKernelEx_ptsz), and the
// driver entry point resolved with cudaEnablePerThreadDefaultStream is the _ptsz one.
#include <cuda.h>

#include "tandem/cuda_check.h"
#include "tandem/library_checks.h"
#include "target_common.h"
#include "target_kernels.cuh"

namespace preload_target {
namespace {

__global__ void fill_ptsz_runtime(uint32_t* out, size_t n, uint32_t seed) { fill_body(out, n, seed); }
__global__ void fill_ptsz_driver(uint32_t* out, size_t n, uint32_t seed) { fill_body(out, n, seed); }

}  // namespace

PtszChecksums run_per_thread_stream_launches(uint32_t* buffer, int grid) {
  PtszChecksums sums;
  // Stream 0 = this thread's default stream.
  fill_ptsz_runtime<<<grid, kFillThreads>>>(buffer, kElements, 21u);
  TANDEM_CUDA_CHECK_LAUNCH();
  sums.runtime = device_checksum(buffer, kElements, cudaStreamPerThread);

  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found{};
  TANDEM_CUDA_CHECK(
      cudaGetDriverEntryPointByVersion("cuLaunchKernel", &entry, 12000, cudaEnablePerThreadDefaultStream, &found));
  TANDEM_REQUIRE(found == cudaDriverEntryPointSuccess && entry, "cuLaunchKernel (per-thread stream) not found");
  const auto launch = reinterpret_cast<decltype(&cuLaunchKernel_ptsz)>(entry);
  cudaFunction_t function = nullptr;
  TANDEM_CUDA_CHECK(cudaGetFuncBySymbol(&function, reinterpret_cast<const void*>(&fill_ptsz_driver)));
  size_t n = kElements;
  uint32_t seed = 22u;
  void* args[] = {&buffer, &n, &seed};
  TANDEM_CU_CHECK(
      launch(reinterpret_cast<CUfunction>(function), grid, 1, 1, kFillThreads, 1, 1, 0, nullptr, args, nullptr));
  sums.driver = device_checksum(buffer, kElements, cudaStreamPerThread);
  return sums;
}

}  // namespace preload_target
