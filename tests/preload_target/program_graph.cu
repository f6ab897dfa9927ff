// CUDA graph capture and replay: a fork-join graph (two streams, a memset, three kernels, an atomic
// sum and a copy) captured once and replayed several times, each replay feeding the next. Under
// `tandem run` the launches are seen while the stream captures (and shaped there, under a shaping
// policy); the replays must compute exactly what they compute without it.
#include "programs.h"
#include "tandem/cuda_check.h"
#include "target_common.h"
#include "target_kernels.cuh"

namespace interposer_programs {
namespace {

constexpr size_t kWords = size_t{1} << 20;
constexpr int kThreads = 256;
constexpr int kReplays = 5;
constexpr uint32_t kSalt = 7u;

__host__ __device__ inline uint32_t affine(uint32_t x) { return x * 3u + 1u; }

__global__ void graph_mix(const uint32_t* x, uint32_t* y, size_t n, uint32_t salt) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = preload_target::mix(x[i] + salt);
}

__global__ void graph_affine(const uint32_t* x, uint32_t* z, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    z[i] = affine(x[i]);
}

// x = y ^ z, and the sum of the new x (integer atomics: the same whatever order blocks run in).
__global__ void graph_combine(const uint32_t* y, const uint32_t* z, uint32_t* x, unsigned long long* sum, size_t n) {
  unsigned long long mine = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const uint32_t v = y[i] ^ z[i];
    x[i] = v;
    mine += v;
  }
  atomicAdd(sum, mine);
}

}  // namespace

Result graph_program() {
  Result result;
  const std::vector<uint32_t> input = random_words(kWords, 18u);
  uint32_t* x = upload(input);
  uint32_t *y = nullptr, *z = nullptr, *snapshot = nullptr;
  unsigned long long* sum = nullptr;
  TANDEM_CUDA_CHECK(cudaMalloc(&y, kWords * sizeof(uint32_t)));
  TANDEM_CUDA_CHECK(cudaMalloc(&z, kWords * sizeof(uint32_t)));
  TANDEM_CUDA_CHECK(cudaMalloc(&snapshot, kWords * sizeof(uint32_t)));
  TANDEM_CUDA_CHECK(cudaMalloc(&sum, sizeof(unsigned long long)));
  cudaStream_t main_stream = nullptr, side = nullptr;
  TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&main_stream, cudaStreamNonBlocking));
  TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  cudaEvent_t fork = nullptr, join = nullptr;
  TANDEM_CUDA_CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  TANDEM_CUDA_CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  const unsigned grid = grid_for(kWords, kThreads, 1024);

  // Nothing below runs until the graph is replayed: capture only records.
  cudaGraph_t graph = nullptr;
  TANDEM_CUDA_CHECK(cudaStreamBeginCapture(main_stream, cudaStreamCaptureModeGlobal));
  TANDEM_CUDA_CHECK(cudaMemsetAsync(sum, 0, sizeof(unsigned long long), main_stream));
  graph_mix<<<grid, kThreads, 0, main_stream>>>(x, y, kWords, kSalt);
  TANDEM_CUDA_CHECK(cudaEventRecord(fork, main_stream));
  TANDEM_CUDA_CHECK(cudaStreamWaitEvent(side, fork, 0));  // the side stream joins the capture
  graph_affine<<<grid, kThreads, 0, side>>>(x, z, kWords);
  TANDEM_CUDA_CHECK(cudaEventRecord(join, side));
  TANDEM_CUDA_CHECK(cudaStreamWaitEvent(main_stream, join, 0));
  graph_combine<<<grid, kThreads, 0, main_stream>>>(y, z, x, sum, kWords);
  TANDEM_CUDA_CHECK(cudaMemcpyAsync(snapshot, x, kWords * sizeof(uint32_t), cudaMemcpyDeviceToDevice, main_stream));
  const cudaError_t launched = cudaGetLastError();
  TANDEM_CUDA_CHECK(cudaStreamEndCapture(main_stream, &graph));
  TANDEM_CUDA_CHECK(launched);
  size_t nodes = 0;
  TANDEM_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  cudaGraphExec_t exec = nullptr;
  TANDEM_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < kReplays; ++replay) TANDEM_CUDA_CHECK(cudaGraphLaunch(exec, main_stream));
  TANDEM_CUDA_CHECK(cudaStreamSynchronize(main_stream));

  const std::vector<uint32_t> out = download(x, kWords);
  const std::vector<uint32_t> copied = download(snapshot, kWords);
  unsigned long long gpu_sum = 0;
  TANDEM_CUDA_CHECK(cudaMemcpy(&gpu_sum, sum, sizeof gpu_sum, cudaMemcpyDeviceToHost));

  // The reference: the same replays on the host.
  std::vector<uint32_t> expected = input;
  uint64_t expected_sum = 0;
  for (int replay = 0; replay < kReplays; ++replay) {
    expected_sum = 0;
    for (auto& v : expected) {
      v = preload_target::mix(v + kSalt) ^ affine(v);
      expected_sum += v;
    }
  }
  result.check(out == expected && copied == expected && gpu_sum == expected_sum);
  result.digest = {{"nodes", nodes},
                   {"replays", kReplays},
                   {"output", preload_target::checksum(out.data(), out.size() * sizeof(uint32_t))},
                   {"snapshot", preload_target::checksum(copied.data(), copied.size() * sizeof(uint32_t))},
                   {"sum", hex64(gpu_sum)}};

  TANDEM_CUDA_CHECK(cudaGraphExecDestroy(exec));
  TANDEM_CUDA_CHECK(cudaGraphDestroy(graph));
  TANDEM_CUDA_CHECK(cudaEventDestroy(fork));
  TANDEM_CUDA_CHECK(cudaEventDestroy(join));
  TANDEM_CUDA_CHECK(cudaStreamDestroy(main_stream));
  TANDEM_CUDA_CHECK(cudaStreamDestroy(side));
  for (void* p : {static_cast<void*>(x), static_cast<void*>(y), static_cast<void*>(z), static_cast<void*>(snapshot),
                  static_cast<void*>(sum)})
    TANDEM_CUDA_CHECK(cudaFree(p));
  return result;
}

}  // namespace interposer_programs
