// Cooperative launches: a kernel that synchronises its whole grid (grid.sync()) twice, launched with
// exactly as many blocks as can be resident at once, through cudaLaunchCooperativeKernel, the
// driver's cuLaunchCooperativeKernel and cuLaunchKernelEx with the cooperative attribute. A
// cooperative grid must fit on the GPU at once: a launch the interposer shaped (fewer blocks per SM)
// would fail, so it must leave them alone.
#include <cooperative_groups.h>
#include <cuda.h>

#include "programs.h"
#include "tandem/cuda_check.h"
#include "tandem/library_checks.h"
#include "target_common.h"
#include "target_kernels.cuh"

namespace interposer_programs {
namespace {

namespace cg = cooperative_groups;

constexpr size_t kWords = size_t{1} << 20;
constexpr int kThreads = 256;

// total = sum of mix(x[i]) (64-bit, wrapping); then out[i] = x[i] + total, which needs every block's
// part of the sum first: two grid-wide barriers.
__global__ void cooperative_sum(const uint32_t* x, size_t n, unsigned long long* partial, unsigned long long* total,
                                uint32_t* out) {
  cg::grid_group grid = cg::this_grid();
  __shared__ unsigned long long block_sum;
  if (threadIdx.x == 0) block_sum = 0;
  __syncthreads();
  unsigned long long mine = 0;
  for (unsigned long long i = grid.thread_rank(); i < n; i += grid.size()) mine += preload_target::mix(x[i]);
  atomicAdd(&block_sum, mine);
  __syncthreads();
  if (threadIdx.x == 0) partial[blockIdx.x] = block_sum;
  grid.sync();
  if (grid.thread_rank() == 0) {
    unsigned long long s = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) s += partial[b];
    *total = s;
  }
  grid.sync();
  const uint32_t add = static_cast<uint32_t>(*total);
  for (unsigned long long i = grid.thread_rank(); i < n; i += grid.size()) out[i] = x[i] + add;
}

template <class Fn>
Fn driver_entry(const char* symbol) {
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found{};
  TANDEM_CUDA_CHECK(cudaGetDriverEntryPointByVersion(symbol, &entry, 12000, cudaEnableDefault, &found));
  TANDEM_REQUIRE(found == cudaDriverEntryPointSuccess && entry, std::string("driver entry point not found: ") + symbol);
  return reinterpret_cast<Fn>(entry);
}

}  // namespace

Result cooperative_program() {
  Result result;
  int device = 0, sm_count = 0, supported = 0;
  TANDEM_CUDA_CHECK(cudaGetDevice(&device));
  TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
  TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrCooperativeLaunch, device));
  TANDEM_REQUIRE(supported, "this GPU does not support cooperative launches");
  int per_sm = 0;
  TANDEM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, cooperative_sum, kThreads, 0));
  // Every block that fits at once: the largest cooperative grid (the digest records only results,
  // which do not depend on the GPU).
  const unsigned grid = static_cast<unsigned>(per_sm * sm_count);

  const std::vector<uint32_t> input = random_words(kWords, 31u);
  uint32_t* x = upload(input);
  uint32_t* out = nullptr;
  unsigned long long *partial = nullptr, *total = nullptr;
  TANDEM_CUDA_CHECK(cudaMalloc(&out, kWords * sizeof(uint32_t)));
  TANDEM_CUDA_CHECK(cudaMalloc(&partial, grid * sizeof(unsigned long long)));
  TANDEM_CUDA_CHECK(cudaMalloc(&total, sizeof(unsigned long long)));
  cudaStream_t stream = nullptr;
  TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaFunction_t runtime_function = nullptr;
  TANDEM_CUDA_CHECK(cudaGetFuncBySymbol(&runtime_function, reinterpret_cast<const void*>(&cooperative_sum)));
  const auto function = reinterpret_cast<CUfunction>(runtime_function);

  uint64_t expected_total = 0;
  for (uint32_t v : input) expected_total += preload_target::mix(v);
  std::vector<uint32_t> expected(kWords);
  for (size_t i = 0; i < kWords; ++i) expected[i] = input[i] + static_cast<uint32_t>(expected_total);

  size_t n = kWords;
  void* args[] = {&x, &n, &partial, &total, &out};
  const auto collect = [&](const char* path) {
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream));
    unsigned long long gpu_total = 0;
    TANDEM_CUDA_CHECK(cudaMemcpy(&gpu_total, total, sizeof gpu_total, cudaMemcpyDeviceToHost));
    const std::vector<uint32_t> host = download(out, kWords);
    result.check(gpu_total == expected_total && host == expected);
    result.digest[path] = {{"total", hex64(gpu_total)},
                           {"output", preload_target::checksum(host.data(), host.size() * sizeof(uint32_t))}};
    TANDEM_CUDA_CHECK(cudaMemsetAsync(out, 0, kWords * sizeof(uint32_t), stream));
  };

  TANDEM_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(&cooperative_sum), dim3(grid),
                                                dim3(kThreads), args, 0, stream));
  collect("runtime");

  const auto launch_cooperative = driver_entry<decltype(&cuLaunchCooperativeKernel)>("cuLaunchCooperativeKernel");
  TANDEM_CU_CHECK(
      launch_cooperative(function, grid, 1, 1, kThreads, 1, 1, 0, reinterpret_cast<CUstream>(stream), args));
  collect("driver");

  const auto launch_ex = driver_entry<decltype(&cuLaunchKernelEx)>("cuLaunchKernelEx");
  CUlaunchAttribute cooperative{};
  cooperative.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  cooperative.value.cooperative = 1;
  CUlaunchConfig config{};
  config.gridDimX = grid, config.gridDimY = 1, config.gridDimZ = 1;
  config.blockDimX = kThreads, config.blockDimY = 1, config.blockDimZ = 1;
  config.hStream = reinterpret_cast<CUstream>(stream);
  config.attrs = &cooperative;
  config.numAttrs = 1;
  TANDEM_CU_CHECK(launch_ex(&config, function, args, nullptr));
  collect("driver_ex");

  TANDEM_CUDA_CHECK(cudaStreamDestroy(stream));
  for (void* p :
       {static_cast<void*>(x), static_cast<void*>(out), static_cast<void*>(partial), static_cast<void*>(total)})
    TANDEM_CUDA_CHECK(cudaFree(p));
  return result;
}

}  // namespace interposer_programs
