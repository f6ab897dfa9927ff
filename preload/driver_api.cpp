#include "driver_api.h"

#include <atomic>
#include <mutex>

#include "real_symbols.h"

namespace tandem::preload {
namespace {

DriverApi* load(void* libcuda) {
  auto* api = new DriverApi;  // lives for the whole process: hooks may run during exit
  api->complete = true;
#define TANDEM_DRIVER_API_LOOKUP(name, parameters, required)                       \
  api->name = reinterpret_cast<decltype(api->name)>(real_dlsym()(libcuda, #name)); \
  if (required && !api->name) api->complete = false;
  TANDEM_DRIVER_API(TANDEM_DRIVER_API_LOOKUP)
#undef TANDEM_DRIVER_API_LOOKUP
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
