// The fake CUPTI of fake_cupti.h. Records are laid out in a buffer as an 8-byte size, then the
// record (CUPTI 13's structure), so that cuptiActivityGetNextRecord can walk them; only this fake
// reads its buffers, as only CUPTI reads CUPTI's.
#include "fake_cupti.h"

#include <cupti.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

std::mutex g_mutex;
CUpti_BuffersCallbackRequestFunc g_request = nullptr;
CUpti_BuffersCallbackCompleteFunc g_complete = nullptr;
int g_registrations = 0;
std::set<int> g_enabled;
// As the real CUPTI attached to a process whose CUDA is initialised already (the interposer's case):
// an API's calls give records only while its domain's kind (CUPTI_ACTIVITY_KIND_DRIVER, _RUNTIME) is
// enabled and the API was not turned off under it; turning an API on alone gives nothing, and
// enabling the kind turns every API of the domain on again.
std::set<uint32_t> g_driver_apis_off, g_runtime_apis_off;
std::vector<std::vector<uint8_t>> g_pending;
std::deque<std::string> g_names;  // kernel and range names: stable for the process's life
uint32_t g_next_correlation = 1000;
uint64_t g_dropped = 0;
int g_nvtx_inits = 0;
thread_local std::vector<std::pair<CUpti_ExternalCorrelationKind, uint64_t>> t_pushed;

template <class Record>
void queue(const Record& r) {
  std::vector<uint8_t> bytes(sizeof r);
  std::memcpy(bytes.data(), &r, sizeof r);
  g_pending.push_back(std::move(bytes));
}

bool enabled(CUpti_ActivityKind kind) { return g_enabled.count(static_cast<int>(kind)) > 0; }

const char* keep(const char* name) {
  g_names.emplace_back(name ? name : "");
  return g_names.back().c_str();
}

size_t padded(size_t n) { return (n + 7) & ~size_t(7); }

// Under g_mutex: a call with this driver callback id issued now; its correlation id.
constexpr uint32_t kMemcpyCbid = 1, kDriverGetVersionCbid = 2, kMemsetCbid = 3;
uint32_t issue_call(uint32_t cbid) {
  const uint32_t correlation = g_next_correlation++;
  if (!enabled(CUPTI_ACTIVITY_KIND_DRIVER) || g_driver_apis_off.count(cbid) ||
      !enabled(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION))
    return correlation;
  // As CUPTI: one record per kind, with the id on top of that kind's stack.
  std::set<int> kinds;
  for (auto it = t_pushed.rbegin(); it != t_pushed.rend(); ++it) {
    if (!kinds.insert(it->first).second) continue;
    CUpti_ActivityExternalCorrelation c{};
    c.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    c.externalKind = it->first;
    c.externalId = it->second;
    c.correlationId = correlation;
    queue(c);
  }
  return correlation;
}

}  // namespace

FAKE_EXPORT CUptiResult cuptiGetVersion(uint32_t* version) {
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  *str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "fake CUPTI error";
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                       CUpti_BuffersCallbackCompleteFunc complete) {
  if (!request || !complete) return CUPTI_ERROR_INVALID_PARAMETER;
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_request = request;
  g_complete = complete;
  ++g_registrations;
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_enabled.insert(static_cast<int>(kind));
  if (kind == CUPTI_ACTIVITY_KIND_DRIVER) g_driver_apis_off.clear();
  if (kind == CUPTI_ACTIVITY_KIND_RUNTIME) g_runtime_apis_off.clear();
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_enabled.erase(static_cast<int>(kind));
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t /*flag*/) {
  std::vector<std::vector<uint8_t>> records;
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    records.swap(g_pending);
    request = g_request;
    complete = g_complete;
  }
  if (!request || records.empty()) return CUPTI_SUCCESS;
  // As CUPTI: buffers from the client, filled and handed back outside any lock of ours.
  size_t next = 0;
  while (next < records.size()) {
    uint8_t* buffer = nullptr;
    size_t size = 0, max_records = 0;
    request(&buffer, &size, &max_records);
    if (!buffer) return CUPTI_ERROR_OUT_OF_MEMORY;
    size_t used = 0;
    while (next < records.size() && used + 8 + padded(records[next].size()) <= size) {
      const uint64_t record_size = padded(records[next].size());
      std::memcpy(buffer + used, &record_size, 8);
      std::memcpy(buffer + used + 8, records[next].data(), records[next].size());
      used += 8 + record_size;
      ++next;
    }
    complete(nullptr, 0, buffer, size, used);
  }
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  size_t offset = 0;
  if (*record) {
    const uint8_t* current = reinterpret_cast<uint8_t*>(*record);
    uint64_t size = 0;
    std::memcpy(&size, current - 8, 8);
    offset = static_cast<size_t>(current - buffer) + size;
  }
  if (offset + 8 > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + offset + 8);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  *dropped = g_dropped;
  g_dropped = 0;
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t id) {
  t_pushed.emplace_back(kind, id);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t* id) {
  for (auto it = t_pushed.rbegin(); it != t_pushed.rend(); ++it) {
    if (it->first != kind) continue;
    if (id) *id = it->second;
    t_pushed.erase(std::next(it).base());
    return CUPTI_SUCCESS;
  }
  return CUPTI_ERROR_QUEUE_EMPTY;
}

FAKE_EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  if (cbid == 0) return CUPTI_ERROR_INVALID_PARAMETER;
  if (cbid == kMemcpyCbid)
    *name = domain == CUPTI_CB_DOMAIN_DRIVER_API ? "cuMemcpyAsync" : "cudaMemcpyAsync_v3020";
  else if (cbid == kDriverGetVersionCbid)
    *name = domain == CUPTI_CB_DOMAIN_DRIVER_API ? "cuDriverGetVersion" : "cudaDriverGetVersion_v3020";
  else if (cbid == kMemsetCbid)
    *name = domain == CUPTI_CB_DOMAIN_DRIVER_API ? "cuMemsetD8Async" : "cudaMemsetAsync_v3020";
  else
    *name = domain == CUPTI_CB_DOMAIN_DRIVER_API ? "cuLaunchKernel" : "cudaLaunchKernel_v7000";
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (enable)
    g_driver_apis_off.erase(cbid);
  else
    g_driver_apis_off.insert(cbid);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (enable)
    g_runtime_apis_off.erase(cbid);
  else
    g_runtime_apis_off.insert(cbid);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT int InitializeInjectionNvtx2(void* /*get_export_table*/) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  ++g_nvtx_inits;
  return 1;
}

FAKE_EXPORT void fake_cupti_kernel_with_smem(const char* name, uint64_t start, uint64_t end, uint32_t device,
                                             uint32_t stream, uint32_t dynamic_smem) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (!enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) return;
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.deviceId = device;
  k.streamId = stream;
  k.correlationId = g_next_correlation++;
  k.dynamicSharedMemory = static_cast<int32_t>(dynamic_smem);
  k.name = keep(name);
  queue(k);
}

FAKE_EXPORT void fake_cupti_kernel(const char* name, uint64_t start, uint64_t end, uint32_t device, uint32_t stream) {
  fake_cupti_kernel_with_smem(name, start, end, device, stream, 0);
}

FAKE_EXPORT void fake_cupti_api_call(uint32_t driver_cbid) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  issue_call(driver_cbid);
}

FAKE_EXPORT void fake_cupti_memcpy(uint64_t start, uint64_t end, uint32_t device, uint32_t stream) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  const uint32_t correlation = issue_call(kMemcpyCbid);
  if (!enabled(CUPTI_ACTIVITY_KIND_MEMCPY)) return;
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  m.start = start;
  m.end = end;
  m.deviceId = device;
  m.streamId = stream;
  m.correlationId = correlation;
  queue(m);
}

FAKE_EXPORT void fake_cupti_set_dropped(uint64_t dropped) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_dropped = dropped;
}

FAKE_EXPORT int fake_cupti_registrations() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  return g_registrations;
}

FAKE_EXPORT int fake_cupti_enabled(int kind) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  return g_enabled.count(kind) ? 1 : 0;
}

FAKE_EXPORT int fake_cupti_api_records_enabled() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  const auto recorded = [](CUpti_ActivityKind kind, const std::set<uint32_t>& off, uint32_t api_count) {
    return enabled(kind) ? static_cast<int>(api_count - 1 - off.size()) : 0;
  };
  return recorded(CUPTI_ACTIVITY_KIND_DRIVER, g_driver_apis_off, CUPTI_DRIVER_TRACE_CBID_SIZE) +
         recorded(CUPTI_ACTIVITY_KIND_RUNTIME, g_runtime_apis_off, CUPTI_RUNTIME_TRACE_CBID_SIZE);
}

FAKE_EXPORT int fake_cupti_nvtx_inits() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  return g_nvtx_inits;
}

FAKE_EXPORT int fake_cupti_correlation_depth() { return static_cast<int>(t_pushed.size()); }
