// 16 threads launching at once: every thread waits at a start line, then launches a chain of
// dependent kernels on its stream (a quarter of them on the per-thread default stream), alternating
// the runtime (<<<>>>) and the driver's cuLaunchKernel, which each thread resolves for itself
// (cuGetProcAddress under the hood). The interposer's lazy initialisation and its tables are hit by
// all threads together.
#include <cuda.h>

#include <atomic>
#include <thread>

#include "programs.h"
#include "tandem/cuda_check.h"
#include "tandem/library_checks.h"
#include "target_common.h"
#include "target_kernels.cuh"

namespace interposer_programs {
namespace {

constexpr int kThreadCount = 16;
constexpr int kLaunchesPerThread = 64;
constexpr size_t kWords = size_t{1} << 16;
constexpr int kThreads = 256;

__host__ __device__ inline uint32_t step(uint32_t v, size_t i, uint32_t salt) {
  return preload_target::mix(v + salt + static_cast<uint32_t>(i));
}

__global__ void thread_step(uint32_t* acc, size_t n, uint32_t salt) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    acc[i] = step(acc[i], i, salt);
}

uint32_t salt_of(int thread, int launch) { return static_cast<uint32_t>(thread * 1000 + launch); }

struct ThreadOutcome {
  std::string checksum;
  bool matches = false;
  std::string error;
};

void run_thread(int t, std::atomic<int>& ready, ThreadOutcome& outcome) {
  try {
    TANDEM_CUDA_CHECK(cudaSetDevice(0));
    const std::vector<uint32_t> input = random_words(kWords, 100u + static_cast<uint32_t>(t));
    uint32_t* acc = upload(input);
    cudaStream_t stream = cudaStreamPerThread;
    if (t % 4 != 0) TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found{};
    TANDEM_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", &entry, 12000, cudaEnableDefault, &found));
    TANDEM_REQUIRE(found == cudaDriverEntryPointSuccess && entry, "cuLaunchKernel not found");
    const auto driver_launch = reinterpret_cast<decltype(&cuLaunchKernel)>(entry);
    cudaFunction_t function = nullptr;
    TANDEM_CUDA_CHECK(cudaGetFuncBySymbol(&function, reinterpret_cast<const void*>(&thread_step)));
    const unsigned grid = grid_for(kWords, kThreads, 64);

    // Everyone starts together.
    ready.fetch_add(1);
    while (ready.load() < kThreadCount) std::this_thread::yield();
    for (int k = 0; k < kLaunchesPerThread; ++k) {
      uint32_t salt = salt_of(t, k);
      if (k % 2 == 0) {
        thread_step<<<grid, kThreads, 0, stream>>>(acc, kWords, salt);
        TANDEM_CUDA_CHECK_LAUNCH();
      } else {
        size_t n = kWords;
        void* args[] = {&acc, &n, &salt};
        TANDEM_CU_CHECK(driver_launch(reinterpret_cast<CUfunction>(function), grid, 1, 1, kThreads, 1, 1, 0,
                                      reinterpret_cast<CUstream>(stream), args, nullptr));
      }
    }
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<uint32_t> out(kWords);
    TANDEM_CUDA_CHECK(cudaMemcpy(out.data(), acc, kWords * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    std::vector<uint32_t> expected = input;
    for (int k = 0; k < kLaunchesPerThread; ++k)
      for (size_t i = 0; i < kWords; ++i) expected[i] = step(expected[i], i, salt_of(t, k));
    outcome.matches = out == expected;
    outcome.checksum = preload_target::checksum(out.data(), out.size() * sizeof(uint32_t));
    if (stream != cudaStreamPerThread) TANDEM_CUDA_CHECK(cudaStreamDestroy(stream));
    TANDEM_CUDA_CHECK(cudaFree(acc));
  } catch (const std::exception& e) {
    outcome.error = e.what();
    ready.fetch_add(kThreadCount);  // never leave the others waiting at the start line
  }
}

}  // namespace

Result threads_program() {
  Result result;
  std::atomic<int> ready{0};
  std::vector<ThreadOutcome> outcomes(kThreadCount);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreadCount; ++t) threads.emplace_back(run_thread, t, std::ref(ready), std::ref(outcomes[t]));
  for (auto& thread : threads) thread.join();
  json sums = json::array();
  for (const auto& outcome : outcomes) {
    TANDEM_REQUIRE(outcome.error.empty(), outcome.error);
    result.check(outcome.matches);
    sums.push_back(outcome.checksum);
  }
  result.digest = {{"threads", kThreadCount}, {"launches_per_thread", kLaunchesPerThread}, {"checksums", sums}};
  return result;
}

}  // namespace interposer_programs
