// A per-thread-default-stream build: preload_target_ptsz.cu (compiled with --default-stream
// per-thread) launches on stream 0 through the runtime and through the driver's _ptsz entry point;
// here four threads run it at once, each on its own default stream and buffer, while the main
// thread runs it too.
#include <thread>

#include "programs.h"
#include "tandem/cuda_check.h"
#include "target_common.h"
#include "target_kernels.cuh"

namespace interposer_programs {
namespace {

// The checksum of fill_body's output for `seed` (target_kernels.cuh), computed on the host.
std::string fill_checksum(uint32_t seed) {
  std::vector<uint32_t> words(preload_target::kElements);
  for (size_t i = 0; i < words.size(); ++i)
    words[i] = preload_target::mix(static_cast<uint32_t>(i) + seed * 0x9E3779B9U);
  return preload_target::checksum(words.data(), words.size() * sizeof(uint32_t));
}

}  // namespace

Result ptsz_program() {
  Result result;
  constexpr int kThreadCount = 4;
  const int grid = 256;
  std::vector<preload_target::PtszChecksums> sums(kThreadCount + 1);
  std::vector<std::string> errors(kThreadCount + 1);
  const auto run = [&](int slot) {
    try {
      TANDEM_CUDA_CHECK(cudaSetDevice(0));
      uint32_t* buffer = nullptr;
      TANDEM_CUDA_CHECK(cudaMalloc(&buffer, preload_target::kElements * sizeof(uint32_t)));
      sums[slot] = preload_target::run_per_thread_stream_launches(buffer, grid);
      TANDEM_CUDA_CHECK(cudaFree(buffer));
    } catch (const std::exception& e) {
      errors[slot] = e.what();
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t <= kThreadCount; ++t) threads.emplace_back(run, t);
  run(0);
  for (auto& thread : threads) thread.join();
  // The seeds preload_target_ptsz.cu uses for its runtime and its driver launch.
  const std::string runtime_expected = fill_checksum(21u), driver_expected = fill_checksum(22u);
  json per_thread = json::array();
  for (int slot = 0; slot <= kThreadCount; ++slot) {
    TANDEM_REQUIRE(errors[slot].empty(), errors[slot]);
    // Every thread computed the same fills (same seeds), each on its own stream.
    result.check(sums[slot].runtime == runtime_expected && sums[slot].driver == driver_expected);
    per_thread.push_back({{"runtime", sums[slot].runtime}, {"driver", sums[slot].driver}});
  }
  result.digest = {{"threads", per_thread}};
  return result;
}

}  // namespace interposer_programs
