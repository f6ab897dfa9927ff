// Which copies run on copy engines and which on SMs: each copy is issued beside a kernel that holds
// every SM for ~20 ms. A copy that finishes long before the kernel ran on a copy engine; one that
// finishes only after it waited for SMs. This is what decides whether NCCL's copy-engine
// collectives overlap a persistent GEMM (docs/PERFORMANCE.md, "copy engines and local copies"):
// NCCL 2.28 issues an out-of-place all-gather's own chunk, and an all-to-all's, as a local copy
// first in the cudaMemcpyBatchAsync that also holds the copies to peers.
//
//   copy_path_probe [BYTES]        JSON on stdout, one object per copy; peer copies need 2 GPUs
#include <cuda_runtime.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tandem/cuda_check.h"
#include "tandem/error.h"

namespace {

__global__ void hold_every_sm(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

struct CopyCase {
  std::string name;
  bool needs_peer;
  std::function<void(cudaStream_t)> issue;
};

void batch(const std::vector<std::pair<void*, const void*>>& copies, size_t bytes, unsigned long long flags,
           cudaStream_t stream) {
  std::vector<void*> dsts;
  std::vector<const void*> srcs;
  std::vector<size_t> sizes;
  for (const auto& c : copies) dsts.push_back(c.first), srcs.push_back(c.second), sizes.push_back(bytes);
  cudaMemcpyAttributes attr = {};
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;  // as NCCL 2.28 (ce_coll.cc) sets it
  attr.flags = flags;
  size_t attr_index = 0;
  TANDEM_CUDA_CHECK(cudaMemcpyBatchAsync(dsts.data(), const_cast<const void**>(srcs.data()), sizes.data(),
                                         copies.size(), &attr, &attr_index, 1, stream));
}

float elapsed_ms(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  TANDEM_CUDA_CHECK(cudaEventElapsedTime(&ms, from, to));
  return ms;
}

int run(size_t bytes) {
  int gpus = 0;
  TANDEM_CUDA_CHECK(cudaGetDeviceCount(&gpus));
  TANDEM_REQUIRE(gpus >= 1, "no GPU visible");
  const bool peer = gpus >= 2;
  char *src = nullptr, *local_dst = nullptr, *peer_dst = nullptr;
  if (peer) {
    TANDEM_CUDA_CHECK(cudaSetDevice(1));
    TANDEM_CUDA_CHECK(cudaMalloc(&peer_dst, bytes));
    TANDEM_CUDA_CHECK(cudaSetDevice(0));
    TANDEM_CUDA_CHECK(cudaDeviceEnablePeerAccess(1, 0));
  }
  TANDEM_CUDA_CHECK(cudaSetDevice(0));
  TANDEM_CUDA_CHECK(cudaMalloc(&src, bytes));
  TANDEM_CUDA_CHECK(cudaMalloc(&local_dst, bytes));
  int sms = 0, blocks_per_sm = 0, clock_khz = 0;
  TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  TANDEM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, hold_every_sm, 128, 0));
  const long long cycles = 20LL * clock_khz;  // ~20 ms at the base clock

  const unsigned long long prefer_ce = cudaMemcpyFlagPreferOverlapWithCompute;
  const size_t pitch_width = 16384;
  const std::vector<CopyCase> cases = {
      {"local cudaMemcpyAsync", false,
       [&](cudaStream_t s) { TANDEM_CUDA_CHECK(cudaMemcpyAsync(local_dst, src, bytes, cudaMemcpyDeviceToDevice, s)); }},
      {"local cudaMemcpyBatchAsync, PreferOverlapWithCompute", false,
       [&](cudaStream_t s) {
         batch({{local_dst, src}}, bytes, prefer_ce, s);
       }},
      {"local cudaMemcpy2DAsync", false,
       [&](cudaStream_t s) {
         TANDEM_CUDA_CHECK(cudaMemcpy2DAsync(local_dst, pitch_width, src, pitch_width, pitch_width, bytes / pitch_width,
                                             cudaMemcpyDeviceToDevice, s));
       }},
      {"peer cudaMemcpyAsync", true,
       [&](cudaStream_t s) { TANDEM_CUDA_CHECK(cudaMemcpyAsync(peer_dst, src, bytes, cudaMemcpyDeviceToDevice, s)); }},
      {"peer cudaMemcpyBatchAsync, PreferOverlapWithCompute", true,
       [&](cudaStream_t s) {
         batch({{peer_dst, src}}, bytes, prefer_ce, s);
       }},
      // NCCL 2.28's order for an out-of-place all-gather or an all-to-all: its own chunk first.
      {"batch [local, peer], PreferOverlapWithCompute", true,
       [&](cudaStream_t s) {
         batch({{local_dst, src}, {peer_dst, src}}, bytes, prefer_ce, s);
       }},
      {"batch [peer, local], PreferOverlapWithCompute", true,
       [&](cudaStream_t s) {
         batch({{peer_dst, src}, {local_dst, src}}, bytes, prefer_ce, s);
       }},
  };

  cudaStream_t kernel_stream, copy_stream;
  TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&kernel_stream, cudaStreamNonBlocking));
  TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_stream, cudaStreamNonBlocking));
  cudaEvent_t start, kernel_end, copy_start, copy_end;
  for (cudaEvent_t* e : {&start, &kernel_end, &copy_start, &copy_end}) TANDEM_CUDA_CHECK(cudaEventCreate(e));

  nlohmann::json out = {
      {"bytes", bytes}, {"sms", sms}, {"kernel_blocks", sms * blocks_per_sm}, {"copies", nlohmann::json::array()}};
  for (const auto& c : cases) {
    if (c.needs_peer && !peer) continue;
    // Alone, twice (the first may pay for lazy setup).
    float alone_ms = 0;
    for (int rep = 0; rep < 2; ++rep) {
      TANDEM_CUDA_CHECK(cudaEventRecord(copy_start, copy_stream));
      c.issue(copy_stream);
      TANDEM_CUDA_CHECK(cudaEventRecord(copy_end, copy_stream));
      TANDEM_CUDA_CHECK(cudaStreamSynchronize(copy_stream));
      alone_ms = elapsed_ms(copy_start, copy_end);
    }
    // Beside the kernel: both streams start from `start`, the kernel is enqueued first, so its
    // blocks take every SM before the copy is issued.
    TANDEM_CUDA_CHECK(cudaEventRecord(start, kernel_stream));
    TANDEM_CUDA_CHECK(cudaStreamWaitEvent(copy_stream, start, 0));
    hold_every_sm<<<sms * blocks_per_sm, 128, 0, kernel_stream>>>(cycles);
    TANDEM_CUDA_CHECK_LAUNCH();
    TANDEM_CUDA_CHECK(cudaEventRecord(kernel_end, kernel_stream));
    c.issue(copy_stream);
    TANDEM_CUDA_CHECK(cudaEventRecord(copy_end, copy_stream));
    TANDEM_CUDA_CHECK(cudaDeviceSynchronize());
    const float kernel_ms = elapsed_ms(start, kernel_end), copy_ms = elapsed_ms(start, copy_end);
    out["copies"].push_back({{"copy", c.name},
                             {"alone_ms", alone_ms},
                             {"kernel_end_ms", kernel_ms},
                             {"copy_end_ms", copy_ms},
                             {"waited_for_sms", copy_ms > 0.9 * kernel_ms}});
  }
  std::printf("%s\n", out.dump(1).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc > 1 ? std::stoull(argv[1]) : size_t(256) << 20);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "copy_path_probe: %s\n", e.what());
    return 1;
  }
}
