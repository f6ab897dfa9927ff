// Cluster launches (compute capability 9.0 and later): blocks of a cluster exchange data through
// distributed shared memory (each reads its neighbour's shared memory), launched with a cluster
// dimension through cudaLaunchKernelEx and the driver's cuLaunchKernelEx, with clusters of 2 and 4.
// On an older GPU the program says so in its digest (the same with and without tandem).
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

// out[i] = x[i] ^ mix(x[j]), j the mirrored thread of the next block in the cluster (its value read
// from that block's shared memory). Needs `blockDim.x` words of dynamic shared memory.
__global__ void cluster_exchange(const uint32_t* x, uint32_t* out, size_t n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ uint32_t tile[];
  cg::cluster_group cluster = cg::this_cluster();
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  tile[threadIdx.x] = i < n ? preload_target::mix(x[i]) : 0u;
  cluster.sync();  // every block's tile is written
  const unsigned peer = (cluster.block_rank() + 1) % cluster.num_blocks();
  const uint32_t* remote = cluster.map_shared_rank(tile, peer);
  const uint32_t v = remote[blockDim.x - 1 - threadIdx.x];
  cluster.sync();  // no block leaves (freeing its shared memory) before its neighbour has read it
  if (i < n) out[i] = x[i] ^ v;
#else
  __trap();  // never launched: the host checks the compute capability first
#endif
}

std::vector<uint32_t> expected_output(const std::vector<uint32_t>& x, unsigned cluster, unsigned grid) {
  std::vector<uint32_t> out(x.size());
  for (unsigned b = 0; b < grid; ++b) {
    const unsigned first = b / cluster * cluster;
    const unsigned peer_block = first + (b - first + 1) % cluster;
    for (unsigned t = 0; t < kThreads; ++t) {
      const size_t i = static_cast<size_t>(b) * kThreads + t;
      if (i >= x.size()) continue;
      const size_t j = static_cast<size_t>(peer_block) * kThreads + (kThreads - 1 - t);
      out[i] = x[i] ^ (j < x.size() ? preload_target::mix(x[j]) : 0u);
    }
  }
  return out;
}

}  // namespace

Result cluster_program() {
  Result result;
  int device = 0, major = 0, minor = 0;
  TANDEM_CUDA_CHECK(cudaGetDevice(&device));
  TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  if (major < 9) {
    result.digest = {{"skipped", "cluster launches need compute capability 9.0, this GPU has " + std::to_string(major) +
                                     "." + std::to_string(minor)}};
    return result;
  }
  const std::vector<uint32_t> input = random_words(kWords, 47u);
  uint32_t* x = upload(input);
  uint32_t* out = nullptr;
  TANDEM_CUDA_CHECK(cudaMalloc(&out, kWords * sizeof(uint32_t)));
  cudaStream_t stream = nullptr;
  TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found{};
  TANDEM_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuLaunchKernelEx", &entry, 12000, cudaEnableDefault, &found));
  TANDEM_REQUIRE(found == cudaDriverEntryPointSuccess && entry, "cuLaunchKernelEx not found");
  const auto driver_launch_ex = reinterpret_cast<decltype(&cuLaunchKernelEx)>(entry);
  cudaFunction_t function = nullptr;
  TANDEM_CUDA_CHECK(cudaGetFuncBySymbol(&function, reinterpret_cast<const void*>(&cluster_exchange)));
  const size_t smem = kThreads * sizeof(uint32_t);

  for (unsigned cluster : {2u, 4u}) {
    const unsigned grid = (grid_for(kWords, kThreads, 1u << 20) + cluster - 1) / cluster * cluster;
    const std::vector<uint32_t> expected = expected_output(input, cluster, grid);
    size_t n = kWords;
    void* args[] = {&x, &out, &n};
    for (const std::string path : {"runtime", "driver"}) {
      if (path == "runtime") {
        cudaLaunchAttribute attribute{};
        attribute.id = cudaLaunchAttributeClusterDimension;
        attribute.val.clusterDim.x = cluster, attribute.val.clusterDim.y = 1, attribute.val.clusterDim.z = 1;
        cudaLaunchConfig_t config{};
        config.gridDim = dim3(grid);
        config.blockDim = dim3(kThreads);
        config.dynamicSmemBytes = smem;
        config.stream = stream;
        config.attrs = &attribute;
        config.numAttrs = 1;
        TANDEM_CUDA_CHECK(cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(&cluster_exchange), args));
      } else {
        CUlaunchAttribute attribute{};
        attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attribute.value.clusterDim.x = cluster, attribute.value.clusterDim.y = 1, attribute.value.clusterDim.z = 1;
        CUlaunchConfig config{};
        config.gridDimX = grid, config.gridDimY = 1, config.gridDimZ = 1;
        config.blockDimX = kThreads, config.blockDimY = 1, config.blockDimZ = 1;
        config.sharedMemBytes = static_cast<unsigned>(smem);
        config.hStream = reinterpret_cast<CUstream>(stream);
        config.attrs = &attribute;
        config.numAttrs = 1;
        TANDEM_CU_CHECK(driver_launch_ex(&config, reinterpret_cast<CUfunction>(function), args, nullptr));
      }
      TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream));
      const std::vector<uint32_t> host = download(out, kWords);
      result.check(host == expected);
      result.digest[path + "_cluster" + std::to_string(cluster)] =
          preload_target::checksum(host.data(), host.size() * sizeof(uint32_t));
      TANDEM_CUDA_CHECK(cudaMemset(out, 0, kWords * sizeof(uint32_t)));
    }
  }
  TANDEM_CUDA_CHECK(cudaStreamDestroy(stream));
  TANDEM_CUDA_CHECK(cudaFree(x));
  TANDEM_CUDA_CHECK(cudaFree(out));
  return result;
}

}  // namespace interposer_programs
