#include "driver_api.h"

#include <atomic>
#include <mutex>

#include "real_symbols.h"

namespace tandem::preload {
namespace {

template <class Fn>
void lookup(void* libcuda, const char* name, Fn& out) {
  out = reinterpret_cast<Fn>(real_dlsym()(libcuda, name));
}

bool has_required(const DriverApi& a) {
  return a.cuFuncGetAttribute && a.cuFuncSetAttribute && a.cuFuncGetName && a.cuCtxGetDevice &&
         a.cuDeviceGetAttribute && a.cuDeviceGetName && a.cuCtxGetStreamPriorityRange && a.cuEventCreate &&
         a.cuEventRecord && a.cuEventQuery && a.cuStreamIsCapturing && a.cuLaunchKernelEx && a.cuLaunchKernelEx_ptsz;
}

DriverApi* load(void* libcuda) {
  auto* api = new DriverApi;  // lives for the whole process: hooks may run during exit
  lookup(libcuda, "cuFuncGetAttribute", api->cuFuncGetAttribute);
  lookup(libcuda, "cuFuncSetAttribute", api->cuFuncSetAttribute);
  lookup(libcuda, "cuFuncGetName", api->cuFuncGetName);
  lookup(libcuda, "cuKernelGetFunction", api->cuKernelGetFunction);
  lookup(libcuda, "cuKernelSetAttribute", api->cuKernelSetAttribute);
  lookup(libcuda, "cuCtxGetDevice", api->cuCtxGetDevice);
  lookup(libcuda, "cuDeviceGetAttribute", api->cuDeviceGetAttribute);
  lookup(libcuda, "cuDeviceGetName", api->cuDeviceGetName);
  lookup(libcuda, "cuCtxGetStreamPriorityRange", api->cuCtxGetStreamPriorityRange);
  lookup(libcuda, "cuEventCreate", api->cuEventCreate);
  lookup(libcuda, "cuEventRecord", api->cuEventRecord);
  lookup(libcuda, "cuEventQuery", api->cuEventQuery);
  lookup(libcuda, "cuStreamIsCapturing", api->cuStreamIsCapturing);
  lookup(libcuda, "cuThreadExchangeStreamCaptureMode", api->cuThreadExchangeStreamCaptureMode);
  lookup(libcuda, "cuLaunchKernelEx", api->cuLaunchKernelEx);
  lookup(libcuda, "cuLaunchKernelEx_ptsz", api->cuLaunchKernelEx_ptsz);
  api->complete = has_required(*api);
  return api;
}

std::atomic<const DriverApi*> g_api{nullptr};
std::mutex g_load_mutex;

}  // namespace

const DriverApi* driver_api() {
  const DriverApi* api = g_api.load(std::memory_order_acquire);
  if (api) return api;
  std::lock_guard<std::mutex> lock(g_load_mutex);
  api = g_api.load(std::memory_order_relaxed);
  if (api) return api;
  void* libcuda = loaded_libcuda();
  if (!libcuda) return nullptr;  // not loaded yet: try again next time
  api = load(libcuda);
  g_api.store(api, std::memory_order_release);
  return api;
}

RelaxedCaptureMode::RelaxedCaptureMode(const DriverApi& api) : api_(api) {
  if (!api_.cuThreadExchangeStreamCaptureMode) return;
  exchanged_ = api_.cuThreadExchangeStreamCaptureMode(&previous_) == CUDA_SUCCESS;
}

RelaxedCaptureMode::~RelaxedCaptureMode() {
  if (exchanged_) api_.cuThreadExchangeStreamCaptureMode(&previous_);  // puts the program's mode back
}

std::optional<int> current_device(const DriverApi& api) {
  CUdevice device = 0;
  if (api.cuCtxGetDevice(&device) != CUDA_SUCCESS) return std::nullopt;
  return static_cast<int>(device);
}

}  // namespace tandem::preload
