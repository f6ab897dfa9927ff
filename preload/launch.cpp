#include "launch.h"

#include "driver_api.h"
#include "hook_handlers.h"

namespace tandem::preload {

Launch launch_from_config(Hook entry, const CUlaunchConfig* config, CUfunction f, void** kernel_params, void** extra) {
  Launch l;
  l.entry = entry;
  l.f = f;
  l.kernel_params = kernel_params;
  l.extra = extra;
  l.config = config;
  l.per_thread_stream = entry == Hook::cuLaunchKernelEx_ptsz;
  if (!config) return l;  // invalid; the driver will say so when it is issued unchanged
  l.grid[0] = config->gridDimX, l.grid[1] = config->gridDimY, l.grid[2] = config->gridDimZ;
  l.block[0] = config->blockDimX, l.block[1] = config->blockDimY, l.block[2] = config->blockDimZ;
  l.shared_mem_bytes = config->sharedMemBytes;
  l.stream = config->hStream;
  for (unsigned i = 0; config->attrs && i < config->numAttrs; ++i) {
    const CUlaunchAttribute& a = config->attrs[i];
    if (a.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && a.value.cooperative) l.cooperative = true;
    if (a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
      l.cluster_size = static_cast<int>(a.value.clusterDim.x * a.value.clusterDim.y * a.value.clusterDim.z);
  }
  return l;
}

CUresult issue(const Launch& l, unsigned smem) {
  switch (l.entry) {
    case Hook::cuLaunchKernel:
    case Hook::cuLaunchKernel_ptsz: {
      const auto real = l.entry == Hook::cuLaunchKernel ? real_cuLaunchKernel() : real_cuLaunchKernel_ptsz();
      if (!real) return CUDA_ERROR_NOT_INITIALIZED;
      return real(l.f, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2], smem, l.stream,
                  l.kernel_params, l.extra);
    }
    case Hook::cuLaunchCooperativeKernel:
    case Hook::cuLaunchCooperativeKernel_ptsz: {
      const auto real = l.entry == Hook::cuLaunchCooperativeKernel ? real_cuLaunchCooperativeKernel()
                                                                   : real_cuLaunchCooperativeKernel_ptsz();
      if (!real) return CUDA_ERROR_NOT_INITIALIZED;
      return real(l.f, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2], smem, l.stream,
                  l.kernel_params);
    }
    case Hook::cuLaunchKernelEx:
    case Hook::cuLaunchKernelEx_ptsz: {
      const auto real = l.entry == Hook::cuLaunchKernelEx ? real_cuLaunchKernelEx() : real_cuLaunchKernelEx_ptsz();
      if (!real) return CUDA_ERROR_NOT_INITIALIZED;
      if (!l.config || l.config->sharedMemBytes == smem) return real(l.config, l.f, l.kernel_params, l.extra);
      CUlaunchConfig changed = *l.config;  // attributes are shared, only the size differs
      changed.sharedMemBytes = smem;
      return real(&changed, l.f, l.kernel_params, l.extra);
    }
    default:
      return CUDA_ERROR_NOT_SUPPORTED;  // not a launch hook: unreachable
  }
}

std::optional<CUresult> issue_with_priority(const Launch& l, unsigned smem, int priority) {
  const DriverApi* api = driver_api();
  const auto real_ex =
      l.per_thread_stream ? (api ? api->cuLaunchKernelEx_ptsz : nullptr) : (api ? api->cuLaunchKernelEx : nullptr);
  if (!real_ex) return std::nullopt;

  CUlaunchAttribute attrs[kMaxCopiedAttributes + 2] = {};
  unsigned count = 0;
  CUlaunchConfig config = {};
  if (l.config) {
    if (l.config->numAttrs > kMaxCopiedAttributes) return std::nullopt;
    config = *l.config;
    for (unsigned i = 0; l.config->attrs && i < l.config->numAttrs; ++i) attrs[count++] = l.config->attrs[i];
  } else {
    config.gridDimX = l.grid[0], config.gridDimY = l.grid[1], config.gridDimZ = l.grid[2];
    config.blockDimX = l.block[0], config.blockDimY = l.block[1], config.blockDimZ = l.block[2];
    config.hStream = l.stream;
    if (l.cooperative) {
      attrs[count].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
      attrs[count].value.cooperative = 1;
      ++count;
    }
  }
  config.sharedMemBytes = smem;
  bool replaced = false;
  for (unsigned i = 0; i < count; ++i) {
    if (attrs[i].id == CU_LAUNCH_ATTRIBUTE_PRIORITY) {
      attrs[i].value.priority = priority;
      replaced = true;
    }
  }
  if (!replaced) {
    attrs[count].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    attrs[count].value.priority = priority;
    ++count;
  }
  config.attrs = attrs;
  config.numAttrs = count;
  // cuLaunchKernel's `extra` (packed parameter buffer) is accepted by cuLaunchKernelEx as is.
  return real_ex(&config, l.f, l.kernel_params, l.extra);
}

}  // namespace tandem::preload
