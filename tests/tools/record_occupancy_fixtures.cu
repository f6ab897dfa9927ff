// Records what the CUDA runtime says about residency, so the CPU tests can hold the pure-C++
// occupancy model (src/core/occupancy.cpp) to the real thing without a GPU.
//
//   record_occupancy_fixtures tests/fixtures/h200_occupancy.json
//
// For a set of kernels whose register counts span ~8..255 (capped with __maxnreg__) and whose
// static shared memory differs, it sweeps block sizes x dynamic shared memory, including the exact
// boundaries where one more byte costs a block, and writes for each legal combination what
// cudaOccupancyMaxActiveBlocksPerMultiprocessor answers. It also records
// cudaOccupancyAvailableDynamicSMemPerBlock, with the residency at the size it returns.
// Nothing is launched; the kernels only need to exist.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tandem/cuda_check.h"
#include "tandem/error.h"

namespace {

// Keeps kLive accumulators alive across a data-dependent loop, so the compiler wants roughly that
// many registers; __maxnreg__ caps what it may use (it spills beyond), so numRegs lands near kCap.
template <int kCap, int kLive>
__global__ void __maxnreg__(kCap) register_kernel(const float* in, float* out, int n) {
  float acc[kLive];
#pragma unroll
  for (int i = 0; i < kLive; ++i) acc[i] = in[(threadIdx.x + i) % n];
  for (int j = 0; j < n; ++j) {
    const float x = in[(j * 7 + threadIdx.x) % n];
#pragma unroll
    for (int i = 0; i < kLive; ++i) acc[i] = acc[i] * x + acc[(i + 1) % kLive];
  }
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < kLive; ++i) sum += acc[i] * static_cast<float>(i + 1);
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// As few registers as a kernel gets (~8-10): the low end of the register sweep.
__global__ void scale_kernel(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.f * in[i];
}

// Static shared memory of kFloats floats (sizes chosen so some are not multiples of 128 bytes).
template <int kFloats>
__global__ void static_smem_kernel(const float* in, float* out, int n) {
  __shared__ float tile[kFloats];
  for (int i = threadIdx.x; i < kFloats; i += blockDim.x) tile[i] = in[i % n];
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = tile[(threadIdx.x * 13) % kFloats];
}

struct KernelEntry {
  std::string name;
  const void* func;
};

template <int kCap, int kLive>
KernelEntry register_entry() {
  return {"register_kernel<" + std::to_string(kCap) + "," + std::to_string(kLive) + ">",
          reinterpret_cast<const void*>(&register_kernel<kCap, kLive>)};
}

template <int kFloats>
KernelEntry static_smem_entry() {
  return {"static_smem_kernel<" + std::to_string(kFloats) + ">",
          reinterpret_cast<const void*>(&static_smem_kernel<kFloats>)};
}

std::vector<KernelEntry> kernels() {
  return {
      {"scale_kernel", reinterpret_cast<const void*>(&scale_kernel)},
      register_entry<32, 4>(),
      register_entry<24, 16>(),
      register_entry<32, 24>(),
      register_entry<33, 40>(),
      register_entry<40, 32>(),
      register_entry<48, 40>(),
      register_entry<56, 48>(),
      register_entry<64, 56>(),
      register_entry<72, 64>(),
      register_entry<80, 72>(),
      register_entry<96, 88>(),
      register_entry<100, 120>(),
      register_entry<128, 120>(),
      register_entry<150, 160>(),
      register_entry<168, 160>(),
      register_entry<200, 192>(),
      register_entry<255, 248>(),
      static_smem_entry<4096>(),   // 16384 B
      static_smem_entry<10001>(),  // 40004 B, not a multiple of the allocation unit
  };
}

const std::vector<int> kThreads = {32, 48, 64, 96, 128, 192, 200, 256, 384, 512, 640, 768, 1000, 1024};

// The sizes the brief sweeps, plus, for every residency 1..8, the largest dynamic size that still
// reaches it and one byte more (computed from the device's per-SM shared memory, allocation unit
// and per-block reservation): these catch any error in rounding or in the reserved 1 KiB.
std::vector<long long> dynamic_sizes(const cudaDeviceProp& prop, long long static_smem) {
  const long long max_dynamic = static_cast<long long>(prop.sharedMemPerBlockOptin) - static_smem;
  std::vector<long long> sizes = {0, 1000, 4096, 20000, 48 * 1024, 64 * 1024, 100 * 1024, 150 * 1024, max_dynamic};
  const long long unit = 128;
  for (long long blocks = 1; blocks <= 8; ++blocks) {
    const long long allocation = static_cast<long long>(prop.sharedMemPerMultiprocessor) / blocks / unit * unit;
    const long long largest = allocation - static_cast<long long>(prop.reservedSharedMemPerBlock) - static_smem;
    sizes.push_back(largest);
    sizes.push_back(largest + 1);
  }
  std::vector<long long> legal;
  for (long long s : sizes)
    if (s >= 0 && s <= max_dynamic) legal.push_back(s);
  std::sort(legal.begin(), legal.end());
  legal.erase(std::unique(legal.begin(), legal.end()), legal.end());
  return legal;
}

nlohmann::json device_props_json(const cudaDeviceProp& p) {
  return {{"name", std::string(p.name)},
          {"major", p.major},
          {"minor", p.minor},
          {"multiProcessorCount", p.multiProcessorCount},
          {"warpSize", p.warpSize},
          {"maxThreadsPerMultiProcessor", p.maxThreadsPerMultiProcessor},
          {"maxThreadsPerBlock", p.maxThreadsPerBlock},
          {"maxBlocksPerMultiProcessor", p.maxBlocksPerMultiProcessor},
          {"regsPerMultiprocessor", p.regsPerMultiprocessor},
          {"regsPerBlock", p.regsPerBlock},
          {"sharedMemPerMultiprocessor", p.sharedMemPerMultiprocessor},
          {"sharedMemPerBlock", p.sharedMemPerBlock},
          {"sharedMemPerBlockOptin", p.sharedMemPerBlockOptin},
          {"reservedSharedMemPerBlock", p.reservedSharedMemPerBlock},
          {"memoryBusWidth", p.memoryBusWidth},
          {"l2CacheSize", p.l2CacheSize}};
}

int run(const char* out_path) {
  int device = 0;
  TANDEM_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  TANDEM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  int driver = 0, runtime = 0;
  TANDEM_CUDA_CHECK(cudaDriverGetVersion(&driver));
  TANDEM_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));

  nlohmann::json fixtures = nlohmann::json::array();
  nlohmann::json available = nlohmann::json::array();
  nlohmann::json kernel_list = nlohmann::json::array();
  for (const KernelEntry& k : kernels()) {
    cudaFuncAttributes attr{};
    TANDEM_CUDA_CHECK(cudaFuncGetAttributes(&attr, k.func));
    const long long static_smem = static_cast<long long>(attr.sharedSizeBytes);
    // Lets every dynamic size up to the device's per-block maximum be asked about.
    const int max_dynamic = static_cast<int>(prop.sharedMemPerBlockOptin - attr.sharedSizeBytes);
    TANDEM_CUDA_CHECK(cudaFuncSetAttribute(k.func, cudaFuncAttributeMaxDynamicSharedMemorySize, max_dynamic));
    TANDEM_CUDA_CHECK(cudaFuncGetAttributes(&attr, k.func));
    kernel_list.push_back({{"kernel", k.name},
                           {"regs_per_thread", attr.numRegs},
                           {"static_smem", static_smem},
                           {"max_threads_per_block", attr.maxThreadsPerBlock},
                           {"max_dynamic_smem", attr.maxDynamicSharedSizeBytes},
                           {"local_bytes", attr.localSizeBytes}});

    for (int threads : kThreads) {
      // Above the kernel's own limit (set by its registers) a launch would fail; not a residency.
      if (threads > attr.maxThreadsPerBlock) continue;
      for (long long dynamic : dynamic_sizes(prop, static_smem)) {
        int blocks = -1;
        TANDEM_CUDA_CHECK(
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k.func, threads, static_cast<size_t>(dynamic)));
        fixtures.push_back({{"kernel", k.name},
                            {"threads_per_block", threads},
                            {"regs_per_thread", attr.numRegs},
                            {"static_smem", static_smem},
                            {"dynamic_smem", dynamic},
                            {"blocks_per_sm", blocks}});
      }
      if (threads != 128 && threads != 256 && threads != 512) continue;
      int natural = 0;
      TANDEM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&natural, k.func, threads, 0));
      for (int want = 1; want <= natural; ++want) {
        size_t bytes = 0;
        TANDEM_CUDA_CHECK(cudaOccupancyAvailableDynamicSMemPerBlock(&bytes, k.func, want, threads));
        int at_bytes = -1;
        TANDEM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&at_bytes, k.func, threads, bytes));
        available.push_back({{"kernel", k.name},
                             {"threads", threads},
                             {"regs_per_thread", attr.numRegs},
                             {"static_smem", static_smem},
                             {"blocks", want},
                             {"bytes", bytes},
                             {"blocks_per_sm_at_bytes", at_bytes}});
      }
    }
  }

  const nlohmann::json out = {{"gpu", std::string(prop.name)},
                              {"cc", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
                              {"driver", driver},
                              {"runtime", runtime},
                              {"device_props", device_props_json(prop)},
                              {"kernels", kernel_list},
                              {"fixtures", fixtures},
                              {"available_dynamic_smem", available}};
  std::ofstream file(out_path);
  TANDEM_REQUIRE(file.good(), std::string("cannot open '") + out_path + "' for writing");
  file << out.dump(1) << "\n";
  TANDEM_REQUIRE(file.good(), std::string("cannot write '") + out_path + "'");
  std::printf("# %s (cc %d.%d): %zu fixtures, %zu available-dynamic-smem entries -> %s\n# OK\n", prop.name, prop.major,
              prop.minor, fixtures.size(), available.size(), out_path);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT.json\n", argv[0]);
    return 2;
  }
  try {
    return run(argv[1]);
  } catch (const tandem::Error& e) {
    std::fprintf(stderr, "record_occupancy_fixtures: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "record_occupancy_fixtures: error: %s\n", e.what());
    return 1;
  }
}
