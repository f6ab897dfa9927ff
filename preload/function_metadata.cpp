#include "function_metadata.h"

#include <algorithm>

#include "log.h"

namespace tandem::preload {
namespace {

// No cuFuncLoad here: the first launch of a function may happen under graph capture, where loading
// a module is not something to do behind the program's back. Registers and static shared memory can
// be read from an unloaded function; the limits that need a loaded one are optional.
CUresult read_attribute(const DriverApi& api, CUfunction f, CUfunction_attribute which, int& out) {
  return api.cuFuncGetAttribute(&out, which, f);
}

}  // namespace

CUfunction function_in_current_context(FunctionRecord& record, const DriverApi& api, int device) {
  if (!record.is_library_kernel) return record.handle;
  if (device < 0 || device >= kMaxDevices || !api.cuKernelGetFunction) return nullptr;
  CUfunction f = record.device_function[device].load(std::memory_order_acquire);
  if (f) return f;
  const RelaxedCaptureMode relaxed(api);
  if (api.cuKernelGetFunction(&f, reinterpret_cast<CUkernel>(record.handle)) != CUDA_SUCCESS) return nullptr;
  record.device_function[device].store(f, std::memory_order_release);
  return f;
}

std::unique_ptr<FunctionRecord> describe_function(CUfunction handle, const DriverApi& api,
                                                  const PreloadConfig& config) {
  // A function's first launch may be into a capturing stream.
  const RelaxedCaptureMode relaxed(api);
  auto record = std::make_unique<FunctionRecord>();
  record->handle = handle;
  CUfunction f = handle;
  int regs = 0;
  CUresult r = read_attribute(api, f, CU_FUNC_ATTRIBUTE_NUM_REGS, regs);
  if (r == CUDA_ERROR_INVALID_HANDLE && api.cuKernelGetFunction) {
    // cudart >= 12 launches context-independent CUkernel handles cast to CUfunction, which the
    // CUfunction queries reject; the current context's function of that kernel answers them.
    CUfunction in_context = nullptr;
    if (api.cuKernelGetFunction(&in_context, reinterpret_cast<CUkernel>(handle)) == CUDA_SUCCESS && in_context) {
      record->is_library_kernel = true;
      f = in_context;
      r = read_attribute(api, f, CU_FUNC_ATTRIBUTE_NUM_REGS, regs);
    }
  }
  const char* name = nullptr;
  if (api.cuFuncGetName(&name, f) == CUDA_SUCCESS && name) record->name = name;
  if (record->name.empty()) record->name = "<unnamed>";
  record->display_name = demangle(record->name);
  record->kind = classify_kernel(record->name);
  record->selected =
      selected_by_patterns(config.include_patterns, config.exclude_patterns, record->name, record->display_name);

  int static_smem = 0, max_threads = 0, max_dynamic = -1, cluster_w = 0, cluster_h = 0, cluster_d = 0;
  record->metadata_ok =
      r == CUDA_SUCCESS && read_attribute(api, f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, static_smem) == CUDA_SUCCESS;
  // These need a loaded function (lazy loading may not have loaded it yet): informative only.
  if (read_attribute(api, f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, max_threads) != CUDA_SUCCESS) max_threads = 0;
  if (read_attribute(api, f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, max_dynamic) != CUDA_SUCCESS)
    max_dynamic = -1;
  // Cluster attributes do not exist before sm_90: absent means no compile-time cluster.
  if (read_attribute(api, f, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, cluster_w) == CUDA_SUCCESS && cluster_w > 0 &&
      read_attribute(api, f, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, cluster_h) == CUDA_SUCCESS &&
      read_attribute(api, f, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, cluster_d) == CUDA_SUCCESS)
    record->required_cluster_size = cluster_w * std::max(cluster_h, 1) * std::max(cluster_d, 1);
  record->regs_per_thread = regs;
  record->static_smem = static_smem;
  record->max_threads_per_block = max_threads;
  record->initial_max_dynamic_smem = max_dynamic;

  log(LogLevel::Debug,
      "kernel %s%s: %s, %d regs, %d B static smem, max %d threads, %d B dynamic smem limit, cluster %d%s%s",
      record->display_name.c_str(), record->is_library_kernel ? " (CUkernel)" : "", to_string(record->kind), regs,
      static_smem, max_threads, max_dynamic, record->required_cluster_size, record->selected ? "" : ", excluded",
      record->metadata_ok ? "" : ", attributes unreadable");
  return record;
}

}  // namespace tandem::preload
