// launch_overhead: host time of one kernel launch, for measuring what `tandem run` adds to it.
//
// An empty kernel is launched with cudaLaunchKernel in batches small enough never to fill the
// launch queue (a full queue would make us time the GPU, not the launch call); only the launch calls
// are timed, the synchronisation between batches is not. Several rounds; the median per-launch time
// is the result. Run it with and without `tandem run` (docs/RUN.md): the difference is the
// interposer's cost per launch (target: <= 0.3 us).
//
//   launch_overhead [--launches N] [--batch B] [--rounds R]     (defaults 200000, 256, 7)
// Prints one JSON line. Every return is checked; any error exits 1.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tandem/cuda_check.h"

namespace {

__global__ void empty_kernel() {}

struct Options {
  long launches = 200000;
  long batch = 256;
  int rounds = 7;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    TANDEM_REQUIRE(i + 1 < argc, "missing value after " + arg);
    const long value = std::strtol(argv[++i], nullptr, 10);
    TANDEM_REQUIRE(value > 0, "bad value for " + arg);
    if (arg == "--launches")
      o.launches = value;
    else if (arg == "--batch")
      o.batch = value;
    else if (arg == "--rounds")
      o.rounds = static_cast<int>(value);
    else
      TANDEM_THROW("unknown option " + arg + " (accepted: --launches N --batch B --rounds R)");
  }
  return o;
}

// Host nanoseconds spent inside `count` launch calls, batch by batch.
double time_launches(long count, long batch, cudaStream_t stream) {
  const void* kernel = reinterpret_cast<const void*>(&empty_kernel);
  double inside_ns = 0;
  for (long done = 0; done < count;) {
    const long n = std::min(batch, count - done);
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < n; ++i) {
      const cudaError_t err = cudaLaunchKernel(kernel, dim3(1), dim3(32), nullptr, 0, stream);
      if (err != cudaSuccess) TANDEM_CUDA_CHECK(err);
    }
    const auto stop = std::chrono::steady_clock::now();
    inside_ns += std::chrono::duration<double, std::nano>(stop - start).count();
    // Drain the queue outside the timed region.
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream));
    done += n;
  }
  return inside_ns;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    TANDEM_CUDA_CHECK(cudaSetDevice(0));
    cudaStream_t stream = nullptr;
    TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    time_launches(std::min(o.launches, 20000L), o.batch, stream);  // warm-up: first-launch work, caches
    std::vector<double> per_launch_us;
    for (int r = 0; r < o.rounds; ++r)
      per_launch_us.push_back(time_launches(o.launches, o.batch, stream) / o.launches / 1000.0);
    std::vector<double> sorted = per_launch_us;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    TANDEM_CUDA_CHECK(cudaStreamDestroy(stream));
    const nlohmann::json result = {
        {"launches_per_round", o.launches},
        {"batch", o.batch},
        {"rounds", per_launch_us},
        {"median_us_per_launch", median},
        {"min_us_per_launch", sorted.front()},
        {"max_us_per_launch", sorted.back()},
        {"preloaded", std::getenv("LD_PRELOAD") && std::strstr(std::getenv("LD_PRELOAD"), "tandem_preload")}};
    std::printf("%s\n", result.dump().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "launch_overhead: error: %s\n", e.what());
    return 1;
  }
}
