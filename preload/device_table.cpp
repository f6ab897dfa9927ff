#include "device_table.h"

#include <string>

#include "log.h"
#include "tandem/gpu_catalog.h"

namespace tandem::preload {
namespace {

bool attribute(const DriverApi& api, CUdevice_attribute which, int device, int& out) {
  return api.cuDeviceGetAttribute(&out, which, static_cast<CUdevice>(device)) == CUDA_SUCCESS;
}

}  // namespace

std::optional<DeviceLimits> query_limits(const DriverApi& api, int device) {
  DeviceLimits d;
  int major = 0, minor = 0, smem_sm = 0, smem_optin = 0, smem_reserved = 0;
  char name[256] = {};
  const bool ok = attribute(api, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device, major) &&
                  attribute(api, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device, minor) &&
                  attribute(api, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device, d.sm_count) &&
                  attribute(api, CU_DEVICE_ATTRIBUTE_WARP_SIZE, device, d.warp_size) &&
                  attribute(api, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, device, d.max_threads_per_sm) &&
                  attribute(api, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, device, d.max_threads_per_block) &&
                  attribute(api, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, device, d.max_blocks_per_sm) &&
                  attribute(api, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, device, d.regs_per_sm) &&
                  attribute(api, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, device, d.max_regs_per_block) &&
                  attribute(api, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, device, smem_sm) &&
                  attribute(api, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device, smem_optin) &&
                  attribute(api, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, device, smem_reserved) &&
                  api.cuDeviceGetName(name, sizeof name - 1, static_cast<CUdevice>(device)) == CUDA_SUCCESS;
  if (!ok) return std::nullopt;
  d.name = name;
  d.arch = "sm_" + std::to_string(major * 10 + minor);
  d.smem_per_sm = smem_sm;
  d.max_smem_per_block = smem_optin;
  d.smem_reserved_per_block = smem_reserved;
  // Thread-block clusters exist from sm_90; the catalogue refines this for known architectures.
  d.max_cluster_size = major >= 9 ? 8 : 0;
  apply_catalog_rules(d);
  return d;
}

DeviceState* DeviceTable::get(const DriverApi& api, int device) {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  DeviceState* state = devices_[device].load(std::memory_order_acquire);
  if (state) return state;
  std::lock_guard<std::mutex> lock(mutex_);
  state = devices_[device].load(std::memory_order_relaxed);
  if (state) return state;
  const RelaxedCaptureMode relaxed(api);  // the first launch on a device may be captured
  state = new DeviceState;                // lives for the whole process
  state->ordinal = device;
  if (auto limits = query_limits(api, device)) {
    state->limits = std::move(*limits);
    state->limits_ok = true;
  } else {
    log(LogLevel::Warn, "could not read the limits of device %d: compute launches there are not shaped", device);
  }
  int least = 0, greatest = 0;
  // The range is the device's; the current context is this device's (we got the ordinal from it).
  if (api.cuCtxGetStreamPriorityRange(&least, &greatest) == CUDA_SUCCESS) {
    state->greatest_priority = greatest;
    state->priority_ok = true;
  } else {
    log(LogLevel::Warn, "could not read the stream priority range of device %d: NCCL launches there are not elevated",
        device);
  }
  log(LogLevel::Debug, "device %d: %s (%s), %d SMs, %lld B smem/SM, priorities %d..%d", device,
      state->limits.name.c_str(), state->limits.arch.c_str(), state->limits.sm_count,
      static_cast<long long>(state->limits.smem_per_sm), least, greatest);
  devices_[device].store(state, std::memory_order_release);
  return state;
}

}  // namespace tandem::preload
