#if !defined(TANDEM_HIP)
#include <nccl.h>

#include "tandem/nccl_check.h"
#endif

#include "tandem/cuda_check.h"
#include "tandem/device.h"
#include "tandem/gpu_catalog.h"

namespace tandem {

DeviceLimits query_device_limits(int device) {
  cudaDeviceProp p{};
  TANDEM_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
#if defined(TANDEM_HIP)
  // HIP's device properties lack what CUDA's give for the occupancy model (registers per CU, blocks
  // per CU, the opt-in LDS maximum): those come from the catalogue entry of the device's architecture
  // ("gfx90a:sramecc+:xnack-" names gfx90a), and what the runtime reports overrides the rest.
  const std::string arch_with_features = p.gcnArchName;
  DeviceLimits d = gpu_limits_for_arch(arch_with_features.substr(0, arch_with_features.find(':')));
#else
  DeviceLimits d;
  d.arch = "sm_" + std::to_string(p.major * 10 + p.minor);
#endif
  if (p.name[0] != '\0') d.name = p.name;
  d.sm_count = p.multiProcessorCount;
  d.warp_size = p.warpSize;
  d.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  d.max_threads_per_block = p.maxThreadsPerBlock;
#if defined(TANDEM_HIP)
  d.smem_per_sm = static_cast<int64_t>(p.maxSharedMemoryPerMultiProcessor);
  d.max_smem_per_block = static_cast<int64_t>(p.sharedMemPerBlock);
#else
  d.max_blocks_per_sm = p.maxBlocksPerMultiProcessor;
  d.regs_per_sm = p.regsPerMultiprocessor;
  d.max_regs_per_block = p.regsPerBlock;
  d.smem_per_sm = static_cast<int64_t>(p.sharedMemPerMultiprocessor);
  d.max_smem_per_block = static_cast<int64_t>(p.sharedMemPerBlockOptin);
  d.smem_reserved_per_block = static_cast<int64_t>(p.reservedSharedMemPerBlock);
  apply_catalog_rules(d);
#endif
  return d;
}

KernelFootprint kernel_footprint(const void* func, int threads_per_block, size_t dynamic_smem,
                                 const std::string& name) {
  cudaFuncAttributes a{};
  TANDEM_CUDA_CHECK(cudaFuncGetAttributes(&a, func));
  KernelFootprint f;
  f.name = name;
  f.threads_per_block = threads_per_block;
  f.regs_per_thread = a.numRegs;
  f.static_smem = static_cast<int64_t>(a.sharedSizeBytes);
  f.dynamic_smem = static_cast<int64_t>(dynamic_smem);
#if defined(TANDEM_HIP)
  f.cluster_size = 1;  // AMD has no thread block clusters
#else
  f.cluster_size =
      a.requiredClusterWidth > 0 ? a.requiredClusterWidth * a.requiredClusterHeight * a.requiredClusterDepth : 1;
#endif
  return f;
}

int visible_gpu_count() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later probes start clean
    TANDEM_THROW(std::string("no GPU visible: cudaGetDeviceCount failed: ") + cudaGetErrorString(err));
  }
  if (n == 0) TANDEM_THROW("no GPU visible: cudaGetDeviceCount found 0 devices");
  return n;
}

#if !defined(TANDEM_HIP)
namespace {
std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }
}  // namespace

std::string SoftwareVersions::driver_text() const { return cuda_version_text(driver); }
std::string SoftwareVersions::runtime_text() const { return cuda_version_text(runtime); }
std::string SoftwareVersions::nccl_text() const {
  // NCCL >= 2.9 encodes MAJOR*10000 + MINOR*100 + PATCH.
  return std::to_string(nccl / 10000) + "." + std::to_string((nccl % 10000) / 100) + "." + std::to_string(nccl % 100);
}

SoftwareVersions software_versions() {
  SoftwareVersions v;
  TANDEM_CUDA_CHECK(cudaDriverGetVersion(&v.driver));
  TANDEM_CUDA_CHECK(cudaRuntimeGetVersion(&v.runtime));
  TANDEM_NCCL_CHECK(nullptr, ncclGetVersion(&v.nccl));
  return v;
}

#endif

}  // namespace tandem
