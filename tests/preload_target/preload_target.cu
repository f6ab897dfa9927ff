// preload_target: a GPU program for checking `tandem run` from the outside. It launches kernels
// through every path the interposer must see, and prints one JSON line:
//
//   checksums   the output of each part; identical with and without `tandem run` (shaping and
//               priority must never change results)
//   residency   blocks per SM reached by the %smid probe (tandem::ResidencyProbe) when launched
//               through the runtime with no padding (2 under `tandem run --policy shape:2`), and
//               when launched cooperatively and as clusters (unchanged under any policy)
//   cublas_*    the SM-count targets cuBLAS and cuBLASLt report (sm-target:N sets them)
//
// Paths: <<<>>> (cudaLaunchKernel); driver cuLaunchKernel, cuLaunchKernelEx and
// cuLaunchCooperativeKernel obtained with cudaGetDriverEntryPointByVersion (which goes through
// cuGetProcAddress, as in every library linking the runtime statically); cudaLaunchKernelExC with a
// cluster dimension; cuBLAS GEMM; a 1-process NCCL all-reduce over the visible GPUs; per-thread
// default stream launches (preload_target_ptsz.cu); a CUDA graph captured then replayed.
//
// Every return is checked; any error prints one line on stderr and exits 1.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <numeric>
#include <thread>
#include <vector>

#include "tandem/cuda_check.h"
#include "tandem/library_checks.h"
#include "tandem/nccl_check.h"
#include "tandem/residency_probe.h"
#include "target_common.h"
#include "target_kernels.cuh"

namespace preload_target {

namespace {

using json = nlohmann::json;

// One kernel per part, so that the interposer's per-kernel statistics show each part separately.
__global__ void fill_runtime(uint32_t* out, size_t n, uint32_t seed) { fill_body(out, n, seed); }
__global__ void fill_driver(uint32_t* out, size_t n, uint32_t seed) { fill_body(out, n, seed); }
__global__ void fill_driver_ex(uint32_t* out, size_t n, uint32_t seed) { fill_body(out, n, seed); }
__global__ void fill_cooperative(uint32_t* out, size_t n, uint32_t seed) { fill_body(out, n, seed); }
__global__ void fill_cluster(uint32_t* out, size_t n, uint32_t seed) { fill_body(out, n, seed); }
__global__ void fill_graph(uint32_t* out, size_t n, uint32_t seed) { fill_body(out, n, seed); }

constexpr int kProbeThreads = 128;
constexpr int kClusterSize = 4;

template <class Fn>
Fn driver_entry(const char* symbol, unsigned long long flags) {
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found{};
  TANDEM_CUDA_CHECK(cudaGetDriverEntryPointByVersion(symbol, &entry, 12000, flags, &found));
  TANDEM_REQUIRE(found == cudaDriverEntryPointSuccess && entry, std::string("driver entry point not found: ") + symbol);
  return reinterpret_cast<Fn>(entry);
}

CUfunction function_of(const void* kernel) {
  cudaFunction_t f = nullptr;
  TANDEM_CUDA_CHECK(cudaGetFuncBySymbol(&f, kernel));
  return reinterpret_cast<CUfunction>(f);
}

struct Context {
  int device = 0;
  int sm_count = 0;
  bool clusters = false;  // sm_90+
  cudaStream_t stream = nullptr;
  uint32_t* buffer = nullptr;
  int fill_grid = 0;
};

// ---- launch paths -------------------------------------------------------------------------------

std::string runtime_launch(Context& c) {
  fill_runtime<<<c.fill_grid, kFillThreads, 0, c.stream>>>(c.buffer, kElements, 1u);
  TANDEM_CUDA_CHECK_LAUNCH();
  return device_checksum(c.buffer, kElements, c.stream);
}

std::string driver_launch(Context& c) {
  const auto launch = driver_entry<decltype(&cuLaunchKernel)>("cuLaunchKernel", cudaEnableLegacyStream);
  size_t n = kElements;
  uint32_t seed = 2u;
  void* args[] = {&c.buffer, &n, &seed};
  TANDEM_CU_CHECK(launch(function_of(reinterpret_cast<const void*>(&fill_driver)), c.fill_grid, 1, 1, kFillThreads, 1,
                         1, 0, reinterpret_cast<CUstream>(c.stream), args, nullptr));
  return device_checksum(c.buffer, kElements, c.stream);
}

std::string driver_launch_ex(Context& c) {
  const auto launch = driver_entry<decltype(&cuLaunchKernelEx)>("cuLaunchKernelEx", cudaEnableLegacyStream);
  CUlaunchConfig config{};
  config.gridDimX = c.fill_grid, config.gridDimY = 1, config.gridDimZ = 1;
  config.blockDimX = kFillThreads, config.blockDimY = 1, config.blockDimZ = 1;
  config.hStream = reinterpret_cast<CUstream>(c.stream);
  size_t n = kElements;
  uint32_t seed = 3u;
  void* args[] = {&c.buffer, &n, &seed};
  TANDEM_CU_CHECK(launch(&config, function_of(reinterpret_cast<const void*>(&fill_driver_ex)), args, nullptr));
  return device_checksum(c.buffer, kElements, c.stream);
}

std::string cooperative_launch(Context& c) {
  const auto launch =
      driver_entry<decltype(&cuLaunchCooperativeKernel)>("cuLaunchCooperativeKernel", cudaEnableLegacyStream);
  size_t n = kElements;
  uint32_t seed = 4u;
  void* args[] = {&c.buffer, &n, &seed};
  // One block per SM is always co-resident, as a cooperative launch requires.
  TANDEM_CU_CHECK(launch(function_of(reinterpret_cast<const void*>(&fill_cooperative)), c.sm_count, 1, 1, kFillThreads,
                         1, 1, 0, reinterpret_cast<CUstream>(c.stream), args));
  return device_checksum(c.buffer, kElements, c.stream);
}

std::string cluster_launch(Context& c) {
  cudaLaunchConfig_t config{};
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = kClusterSize, cluster.val.clusterDim.y = 1, cluster.val.clusterDim.z = 1;
  config.gridDim = dim3(static_cast<unsigned>((c.fill_grid + kClusterSize - 1) / kClusterSize * kClusterSize));
  config.blockDim = dim3(kFillThreads);
  config.stream = c.stream;
  config.attrs = &cluster;
  config.numAttrs = 1;
  size_t n = kElements;
  uint32_t seed = 5u;
  void* args[] = {&c.buffer, &n, &seed};
  TANDEM_CUDA_CHECK(cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(&fill_cluster), args));
  return device_checksum(c.buffer, kElements, c.stream);
}

std::string graph_launch(Context& c) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  // The launch is captured (the interposer sees it now and shapes the captured node) and only runs
  // when the graph is replayed.
  TANDEM_CUDA_CHECK(cudaMemsetAsync(c.buffer, 0, kElements * sizeof(uint32_t), c.stream));
  TANDEM_CUDA_CHECK(cudaStreamBeginCapture(c.stream, cudaStreamCaptureModeGlobal));
  fill_graph<<<c.fill_grid, kFillThreads, 0, c.stream>>>(c.buffer, kElements, 9u);
  const cudaError_t launched = cudaGetLastError();
  TANDEM_CUDA_CHECK(cudaStreamEndCapture(c.stream, &graph));
  TANDEM_CUDA_CHECK(launched);
  TANDEM_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 2; ++replay) TANDEM_CUDA_CHECK(cudaGraphLaunch(exec, c.stream));
  const std::string sum = device_checksum(c.buffer, kElements, c.stream);
  TANDEM_CUDA_CHECK(cudaGraphExecDestroy(exec));
  TANDEM_CUDA_CHECK(cudaGraphDestroy(graph));
  return sum;
}

// ---- residency ----------------------------------------------------------------------------------

int probe_natural_residency() {
  int blocks = 0;
  TANDEM_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, tandem::residency_probe_kernel(), kProbeThreads, 0));
  return blocks;
}

// The probe through the runtime, with no dynamic shared memory of its own.
int probe_runtime(Context& c, tandem::ResidencyProbe& probe) {
  probe.reset(c.stream);
  tandem::ProbeKernelArgs args = probe.args();
  void* params[] = {&args};
  const int natural = probe_natural_residency();
  TANDEM_CUDA_CHECK(cudaLaunchKernel(tandem::residency_probe_kernel(), dim3(probe.grid_for(natural)),
                                     dim3(kProbeThreads), params, 0, c.stream));
  return probe.max_blocks_per_sm(c.stream);
}

// Exactly as many blocks as can be co-resident, launched cooperatively through the driver.
int probe_cooperative(Context& c, tandem::ResidencyProbe& probe) {
  const auto launch =
      driver_entry<decltype(&cuLaunchCooperativeKernel)>("cuLaunchCooperativeKernel", cudaEnableLegacyStream);
  probe.reset(c.stream);
  tandem::ProbeKernelArgs args = probe.args();
  void* params[] = {&args};
  const unsigned grid = static_cast<unsigned>(probe_natural_residency() * c.sm_count);
  TANDEM_CU_CHECK(launch(function_of(tandem::residency_probe_kernel()), grid, 1, 1, kProbeThreads, 1, 1, 0,
                         reinterpret_cast<CUstream>(c.stream), params));
  return probe.max_blocks_per_sm(c.stream);
}

int probe_cluster(Context& c, tandem::ResidencyProbe& probe) {
  probe.reset(c.stream);
  tandem::ProbeKernelArgs args = probe.args();
  void* params[] = {&args};
  cudaLaunchConfig_t config{};
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = kClusterSize, cluster.val.clusterDim.y = 1, cluster.val.clusterDim.z = 1;
  const int grid = probe.grid_for(probe_natural_residency());
  config.gridDim = dim3(static_cast<unsigned>((grid + kClusterSize - 1) / kClusterSize * kClusterSize));
  config.blockDim = dim3(kProbeThreads);
  config.stream = c.stream;
  config.attrs = &cluster;
  config.numAttrs = 1;
  TANDEM_CUDA_CHECK(cudaLaunchKernelExC(&config, tandem::residency_probe_kernel(), params));
  return probe.max_blocks_per_sm(c.stream);
}

// ---- cuBLAS -------------------------------------------------------------------------------------

// Small integers in bf16: every product and sum is exact in fp32, so the result does not depend on
// the algorithm cuBLAS picks (which an SM-count target may change).
json cublas_part(Context& c) {
  constexpr int M = 256, N = 256, K = 256;
  std::vector<__nv_bfloat16> a(M * K), b(K * N);
  std::vector<float> a_ref(M * K), b_ref(K * N);
  for (int i = 0; i < M * K; ++i) a_ref[i] = static_cast<float>((i * 7) % 5 - 2), a[i] = __float2bfloat16(a_ref[i]);
  for (int i = 0; i < K * N; ++i) b_ref[i] = static_cast<float>((i * 3) % 5 - 2), b[i] = __float2bfloat16(b_ref[i]);
  __nv_bfloat16 *da = nullptr, *db = nullptr;
  float* dc = nullptr;
  TANDEM_CUDA_CHECK(cudaMalloc(&da, a.size() * sizeof(a[0])));
  TANDEM_CUDA_CHECK(cudaMalloc(&db, b.size() * sizeof(b[0])));
  TANDEM_CUDA_CHECK(cudaMalloc(&dc, sizeof(float) * M * N));
  TANDEM_CUDA_CHECK(cudaMemcpy(da, a.data(), a.size() * sizeof(a[0]), cudaMemcpyHostToDevice));
  TANDEM_CUDA_CHECK(cudaMemcpy(db, b.data(), b.size() * sizeof(b[0]), cudaMemcpyHostToDevice));

  cublasHandle_t handle = nullptr;
  TANDEM_CUBLAS_CHECK(cublasCreate(&handle));
  TANDEM_CUBLAS_CHECK(cublasSetStream(handle, c.stream));
  int sm_target = -1;
  TANDEM_CUBLAS_CHECK(cublasGetSmCountTarget(handle, &sm_target));
  const float alpha = 1.0f, beta = 0.0f;
  TANDEM_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &alpha, da, CUDA_R_16BF, M, db,
                                   CUDA_R_16BF, K, &beta, dc, CUDA_R_32F, M, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  TANDEM_CUDA_CHECK(cudaStreamSynchronize(c.stream));
  std::vector<float> result(M * N);
  TANDEM_CUDA_CHECK(cudaMemcpy(result.data(), dc, sizeof(float) * M * N, cudaMemcpyDeviceToHost));
  for (int col = 0; col < N; ++col)
    for (int row = 0; row < M; ++row) {
      float expected = 0;
      for (int k = 0; k < K; ++k) expected += a_ref[k * M + row] * b_ref[col * K + k];
      TANDEM_REQUIRE(result[col * M + row] == expected, "cuBLAS GEMM result differs from the reference at (" +
                                                            std::to_string(row) + "," + std::to_string(col) + ")");
    }
  TANDEM_CUBLAS_CHECK(cublasDestroy(handle));

  cublasLtMatmulDesc_t desc = nullptr;
  TANDEM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  int32_t lt_target = -1;
  size_t written = 0;
  TANDEM_CUBLAS_CHECK(cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &lt_target,
                                                     sizeof lt_target, &written));
  TANDEM_CUBLAS_CHECK(cublasLtMatmulDescDestroy(desc));

  TANDEM_CUDA_CHECK(cudaFree(da));
  TANDEM_CUDA_CHECK(cudaFree(db));
  TANDEM_CUDA_CHECK(cudaFree(dc));
  return {{"checksum", checksum(result.data(), result.size() * sizeof(float))},
          {"sm_count_target", sm_target},
          {"lt_sm_count_target", lt_target}};
}

// ---- NCCL ---------------------------------------------------------------------------------------

// Waits for every rank's stream, polling NCCL's asynchronous errors; throws instead of hanging.
void wait_for_collective(const std::vector<ncclComm_t>& comms, const std::vector<cudaStream_t>& streams) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (size_t r = 0; r < comms.size(); ++r) {
    TANDEM_CUDA_CHECK(cudaSetDevice(static_cast<int>(r)));
    while (true) {
      const cudaError_t state = cudaStreamQuery(streams[r]);
      if (state == cudaSuccess) break;
      if (state != cudaErrorNotReady) TANDEM_CUDA_CHECK(state);
      ncclResult_t async = ncclSuccess;
      TANDEM_NCCL_CHECK(comms[r], ncclCommGetAsyncError(comms[r], &async));
      TANDEM_NCCL_CHECK(comms[r], async);
      TANDEM_REQUIRE(std::chrono::steady_clock::now() < deadline, "NCCL all-reduce did not finish within 120 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

json nccl_part(int device_count) {
  const int ranks = std::min(device_count, 8);
  constexpr size_t kCount = size_t{1} << 22;  // 16 MiB of int32 per rank: NCCL runs kernels, not a copy
  std::vector<int> devices(ranks);
  std::iota(devices.begin(), devices.end(), 0);
  std::vector<ncclComm_t> comms(ranks);
  TANDEM_NCCL_CHECK(nullptr, ncclCommInitAll(comms.data(), ranks, devices.data()));
  std::vector<int32_t*> send(ranks), recv(ranks);
  std::vector<cudaStream_t> streams(ranks);
  std::vector<int32_t> host(kCount);
  for (int r = 0; r < ranks; ++r) {
    TANDEM_CUDA_CHECK(cudaSetDevice(r));
    TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
    TANDEM_CUDA_CHECK(cudaMalloc(&send[r], kCount * sizeof(int32_t)));
    TANDEM_CUDA_CHECK(cudaMalloc(&recv[r], kCount * sizeof(int32_t)));
    for (size_t i = 0; i < kCount; ++i) host[i] = (r + 1) * static_cast<int32_t>(i % 1000);
    TANDEM_CUDA_CHECK(cudaMemcpy(send[r], host.data(), kCount * sizeof(int32_t), cudaMemcpyHostToDevice));
  }
  constexpr int kIterations = 3;
  for (int it = 0; it < kIterations; ++it) {
    TANDEM_NCCL_CHECK(nullptr, ncclGroupStart());
    for (int r = 0; r < ranks; ++r)
      TANDEM_NCCL_CHECK(comms[r], ncclAllReduce(send[r], recv[r], kCount, ncclInt32, ncclSum, comms[r], streams[r]));
    TANDEM_NCCL_CHECK(nullptr, ncclGroupEnd());
    wait_for_collective(comms, streams);
  }
  const int32_t factor = ranks * (ranks + 1) / 2;
  std::string sum0;
  for (int r = 0; r < ranks; ++r) {
    TANDEM_CUDA_CHECK(cudaSetDevice(r));
    TANDEM_CUDA_CHECK(cudaMemcpy(host.data(), recv[r], kCount * sizeof(int32_t), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < kCount; ++i)
      TANDEM_REQUIRE(host[i] == factor * static_cast<int32_t>(i % 1000),
                     "all-reduce result wrong on rank " + std::to_string(r) + " at " + std::to_string(i));
    if (r == 0) sum0 = checksum(host.data(), kCount * sizeof(int32_t));
    TANDEM_CUDA_CHECK(cudaFree(send[r]));
    TANDEM_CUDA_CHECK(cudaFree(recv[r]));
    TANDEM_CUDA_CHECK(cudaStreamDestroy(streams[r]));
    TANDEM_NCCL_CHECK(comms[r], ncclCommDestroy(comms[r]));
  }
  TANDEM_CUDA_CHECK(cudaSetDevice(0));
  return {{"checksum", sum0}, {"ranks", ranks}};
}

json run() {
  // NVLink multicast stays off on the test machine (docs: DESIGN.md); a caller's setting wins.
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  int device_count = 0;
  TANDEM_CUDA_CHECK(cudaGetDeviceCount(&device_count));
  TANDEM_REQUIRE(device_count > 0, "no GPU visible");

  Context c;
  TANDEM_CUDA_CHECK(cudaSetDevice(c.device));
  TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&c.sm_count, cudaDevAttrMultiProcessorCount, c.device));
  int major = 0;
  TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, c.device));
  c.clusters = major >= 9;
  TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
  TANDEM_CUDA_CHECK(cudaMalloc(&c.buffer, kElements * sizeof(uint32_t)));
  c.fill_grid = c.sm_count * 8;

  json checksums;
  checksums["runtime"] = runtime_launch(c);
  checksums["driver_launch"] = driver_launch(c);
  checksums["driver_launch_ex"] = driver_launch_ex(c);
  checksums["cooperative"] = cooperative_launch(c);
  checksums["cluster"] = c.clusters ? json(cluster_launch(c)) : json(nullptr);
  const PtszChecksums ptsz = run_per_thread_stream_launches(c.buffer, c.fill_grid);
  checksums["ptsz_runtime"] = ptsz.runtime;
  checksums["ptsz_driver"] = ptsz.driver;
  checksums["graph"] = graph_launch(c);
  const json blas = cublas_part(c);
  checksums["cublas"] = blas["checksum"];
  const json nccl = nccl_part(device_count);
  checksums["nccl"] = nccl["checksum"];

  json residency;
  tandem::ResidencyProbe probe(c.device);
  residency["natural"] = probe_natural_residency();
  residency["probe_runtime"] = probe_runtime(c, probe);
  residency["cooperative"] = probe_cooperative(c, probe);
  residency["cluster"] = c.clusters ? json(probe_cluster(c, probe)) : json(nullptr);

  TANDEM_CUDA_CHECK(cudaFree(c.buffer));
  TANDEM_CUDA_CHECK(cudaStreamDestroy(c.stream));
  return {{"devices", device_count},
          {"sm_count", c.sm_count},
          {"clusters_supported", c.clusters},
          {"nccl_ranks", nccl["ranks"]},
          {"checksums", checksums},
          {"residency", residency},
          {"cublas_sm_count_target", blas["sm_count_target"]},
          {"cublaslt_sm_count_target", blas["lt_sm_count_target"]},
          {"ok", true}};
}

}  // namespace
}  // namespace preload_target

int main() {
  try {
    const auto result = preload_target::run();
    std::printf("%s\n", result.dump().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "preload_target: error: %s\n", e.what());
    return 1;
  }
}
