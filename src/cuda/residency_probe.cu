#include <algorithm>

#include "tandem/cuda_check.h"
#include "tandem/gpu_device_functions.h"
#include "tandem/residency_probe.h"

namespace tandem {
namespace {

using gpu::global_ns;

__global__ void probe_kernel(ProbeKernelArgs a) {
  // Thread 0 of each block accounts for the whole block; the other threads only occupy the SM.
  const unsigned sm = gpu::sm_slot();
  if (threadIdx.x == 0) {
    atomicMax(&a.peak_per_sm[sm], atomicAdd(&a.live_per_sm[sm], 1) + 1);
  }
  __syncthreads();
  // Stay resident long enough for every block this SM can host to be dispatched beside us.
  const unsigned long long until = global_ns() + static_cast<unsigned long long>(a.spin_ns);
  while (global_ns() < until) {
  }
  __syncthreads();
  if (threadIdx.x == 0) atomicSub(&a.live_per_sm[sm], 1);
}

}  // namespace

const void* residency_probe_kernel() { return reinterpret_cast<const void*>(&probe_kernel); }

ResidencyProbe::ResidencyProbe(int device, long long spin_ns) : device_(device), spin_ns_(spin_ns) {
  TANDEM_CUDA_CHECK(cudaSetDevice(device_));
  TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
  // One counter per SM id the device can report (on AMD more ids than CUs: gpu_device_functions.h).
  slot_count_ = gpu::sm_slot_count(sm_count_);
  TANDEM_CUDA_CHECK(cudaMalloc(&live_, sizeof(int) * slot_count_));
  TANDEM_CUDA_CHECK(cudaMalloc(&peak_, sizeof(int) * slot_count_));
}

ResidencyProbe::~ResidencyProbe() {
  cudaFree(live_);  // destructors must not throw; a failure here has nothing left to protect
  cudaFree(peak_);
}

void ResidencyProbe::reset(cudaStream_t stream) {
  TANDEM_CUDA_CHECK(cudaMemsetAsync(live_, 0, sizeof(int) * slot_count_, stream));
  TANDEM_CUDA_CHECK(cudaMemsetAsync(peak_, 0, sizeof(int) * slot_count_, stream));
}

void ResidencyProbe::launch(int threads_per_block, size_t dynamic_smem, cudaStream_t stream) {
  TANDEM_CUDA_CHECK(
      cudaFuncSetAttribute(probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(dynamic_smem)));
  int max_threads_per_sm = 0;
  TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&max_threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device_));
  const int upper_bound = std::max(1, max_threads_per_sm / threads_per_block);
  probe_kernel<<<grid_for(upper_bound), threads_per_block, dynamic_smem, stream>>>(args());
  TANDEM_CUDA_CHECK_LAUNCH();
}

std::vector<int> ResidencyProbe::peaks(cudaStream_t stream) const {
  TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<int> host(slot_count_);
  TANDEM_CUDA_CHECK(cudaMemcpy(host.data(), peak_, sizeof(int) * slot_count_, cudaMemcpyDeviceToHost));
  return host;
}

int ResidencyProbe::max_blocks_per_sm(cudaStream_t stream) const {
  const auto p = peaks(stream);
  return *std::max_element(p.begin(), p.end());
}

}  // namespace tandem
