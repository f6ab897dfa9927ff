// libtandem_timeline.so (tandem_timeline.h): CUPTI activity records of the program, kept in memory.
//
// Cost on the program: CUPTI's own (it timestamps each kernel, copy and memset on the GPU); this
// library does nothing on the launch path. Its work runs when CUPTI hands back a full buffer, on
// CUPTI's thread: a pass over the buffer that copies 48 bytes per record. Buffers are large (the
// interposer asks for 8 MiB) so that hand-backs are rare.
//
// CUPTI is reached only through the resolver the interposer passes, which looks every function up in
// the one CUPTI of the process: this library neither links nor loads CUPTI.
#include "tandem_timeline.h"

#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#define TANDEM_TIMELINE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// The external correlation kinds of tandem's communication work and of the marks
// (tandem_timeline_mark). Kineto uses CUSTOM0 and CUSTOM1 while it profiles, when the timeline has
// handed CUPTI over and pushes nothing any more.
constexpr CUpti_ExternalCorrelationKind kCommunicationKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1;
constexpr uint64_t kCommunicationId = 1;
constexpr CUpti_ExternalCorrelationKind kMarkKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;

// The CUPTI functions used, resolved once at start.
struct Cupti {
  decltype(&cuptiGetVersion) get_version = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped_records = nullptr;
  // For correlating copies only (optional).
  decltype(&cuptiActivityPushExternalCorrelationId) push_correlation = nullptr;
  decltype(&cuptiActivityPopExternalCorrelationId) pop_correlation = nullptr;
  decltype(&cuptiActivityEnableDriverApi) enable_driver_api = nullptr;
  decltype(&cuptiActivityEnableRuntimeApi) enable_runtime_api = nullptr;
  decltype(&cuptiGetCallbackName) callback_name = nullptr;
};

struct Recorder {
  Cupti cupti;
  tandem_timeline_options options{};
  std::atomic<bool> recording{false};
  std::atomic<bool> correlating{false};
  std::atomic<bool> marking{false};
  bool stopped = false;
  std::vector<CUpti_ActivityKind> enabled_kinds;
  std::vector<CUpti_CallbackId> enabled_driver_apis;
  std::vector<CUpti_CallbackId> enabled_runtime_apis;

  std::mutex mutex;     // guards everything below; taken in the buffer callbacks
  bool closed = false;  // stopped and flushed: the records are read now, a late buffer is only freed
  std::vector<tandem_timeline_activity> activities;
  std::vector<tandem_timeline_mark_record> marks;
  std::vector<uint32_t> communication_correlations;
  std::deque<std::string> name_storage;  // stable addresses
  std::vector<const char*> names;
  std::unordered_map<const void*, uint32_t> name_by_address;  // CUPTI's kernel names are shared pointers
  std::unordered_map<std::string, uint32_t> name_by_text;
  tandem_timeline_counts counts{};
};

// Never destroyed: the interposer reads the records during exit, after this library's destructors
// may have run.
Recorder* g_recorder = nullptr;

void say(char* why, size_t size, const char* format, ...) {
  if (!why || size == 0) return;
  va_list args;
  va_start(args, format);
  std::vsnprintf(why, size, format, args);
  va_end(args);
}

std::string result_text(const Cupti& c, CUptiResult result) {
  const char* text = nullptr;
  if (c.result_string && c.result_string(result, &text) == CUPTI_SUCCESS && text) return text;
  return "CUPTI error " + std::to_string(static_cast<int>(result));
}

// Under the recorder's mutex.
uint32_t intern(Recorder& r, const char* name) {
  if (!name) name = "";
  const auto by_address = r.name_by_address.find(name);
  if (by_address != r.name_by_address.end()) return by_address->second;
  std::string text(name);
  auto by_text = r.name_by_text.find(text);
  uint32_t index = 0;
  if (by_text == r.name_by_text.end()) {
    index = static_cast<uint32_t>(r.names.size());
    r.name_storage.push_back(text);
    r.names.push_back(r.name_storage.back().c_str());
    r.name_by_text.emplace(std::move(text), index);
  } else {
    index = by_text->second;
  }
  r.name_by_address.emplace(name, index);
  return index;
}

void keep(Recorder& r, tandem_timeline_activity a) {
  if (a.end_ns <= 0 || a.end_ns < a.start_ns) {
    ++r.counts.incomplete;
    return;
  }
  if (r.activities.size() >= r.options.max_records) {
    ++r.counts.over_limit;
    return;
  }
  r.activities.push_back(a);
  ++r.counts.records;
}

// The fields every kind of CUPTI record has, and the record's name (interned).
template <class Record>
tandem_timeline_activity activity(Recorder& r, const Record* x, uint8_t kind, const char* name) {
  tandem_timeline_activity a{};
  a.start_ns = static_cast<int64_t>(x->start);
  a.end_ns = static_cast<int64_t>(x->end);
  a.device = x->deviceId;
  a.stream = x->streamId;
  a.correlation = x->correlationId;
  a.kind = kind;
  a.name = intern(r, name);
  return a;
}

// One record; under the recorder's mutex.
void take(Recorder& r, const CUpti_Activity* record) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      tandem_timeline_activity a = activity(r, k, TANDEM_TIMELINE_KERNEL, k->name);
      a.dynamic_smem = static_cast<uint32_t>(std::max<int32_t>(k->dynamicSharedMemory, 0));
      keep(r, a);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      tandem_timeline_activity a = activity(r, m, TANDEM_TIMELINE_MEMCPY, "memcpy");
      a.runtime_correlation = m->runtimeCorrelationId;
      a.copy_kind = m->copyKind;
      keep(r, a);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record);
      tandem_timeline_activity a = activity(r, m, TANDEM_TIMELINE_PEER_COPY, "memcpy peer");
      a.copy_kind = m->copyKind;
      keep(r, a);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET:
      keep(r, activity(r, reinterpret_cast<const CUpti_ActivityMemset4*>(record), TANDEM_TIMELINE_MEMSET, "memset"));
      break;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto* c = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      if (c->externalKind == kCommunicationKind) {
        r.communication_correlations.push_back(c->correlationId);
        ++r.counts.correlated;
      } else if (c->externalKind == kMarkKind) {
        r.marks.push_back({c->externalId, c->correlationId, 0});
        ++r.counts.marks;
      }
      break;
    }
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      ++r.counts.api_records;
      break;
    default:
      break;
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  Recorder* r = g_recorder;
  const size_t bytes = r ? r->options.buffer_bytes : size_t(1) << 20;
  // CUPTI asks for ACTIVITY_RECORD_ALIGNMENT (8); malloc gives 16.
  *buffer = static_cast<uint8_t*>(std::malloc(bytes));
  *size = *buffer ? bytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t /*size*/,
                               size_t valid_size) {
  Recorder* r = g_recorder;
  if (r && buffer) {
    const std::lock_guard<std::mutex> lock(r->mutex);
    if (r->closed) {
      std::free(buffer);
      return;
    }
    ++r->counts.buffers;
    CUpti_Activity* record = nullptr;
    while (valid_size > 0 && r->cupti.next_record(buffer, valid_size, &record) == CUPTI_SUCCESS && record)
      take(*r, record);
    size_t dropped = 0;
    if (r->cupti.dropped_records(context, stream, &dropped) == CUPTI_SUCCESS) r->counts.dropped += dropped;
  }
  std::free(buffer);
}

template <class Fn>
bool bind(tandem_timeline_resolve_fn resolve, Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(resolve(name));
  return fn != nullptr;
}

bool is_copy_api(const char* name) {
  return name && (std::strstr(name, "Memcpy") || std::strstr(name, "memcpy") || std::strstr(name, "Memset") ||
                  std::strstr(name, "memset"));
}

// API records of the chosen calls of one domain (driver or runtime) and of no other: with them CUPTI
// emits the external correlation records that tie a copy to tandem's communication work, or a step's
// mark to its place among the process's calls. Kernel launches are never traced this way.
//
// The whole kind first, then every API but the chosen ones off: the timeline starts at the program's
// first CUDA call, so CUPTI attaches to a process whose CUDA is initialised already, and there
// cuptiActivityEnableDriverApi/EnableRuntimeApi alone give no records at all (CUDA 13.0, driver
// 580.159, H200, 2026-12-01), while turning APIs off under an enabled kind works. The kind is enabled
// before the per-API calls because enabling it afterwards would override them.
bool enable_api_records(Recorder& r, CUpti_ActivityKind kind, CUpti_CallbackDomain domain, uint32_t api_count,
                        const std::function<bool(CUpti_CallbackId, const char*)>& chosen) {
  const Cupti& c = r.cupti;
  const auto enable_api = domain == CUPTI_CB_DOMAIN_DRIVER_API ? c.enable_driver_api : c.enable_runtime_api;
  auto& enabled = domain == CUPTI_CB_DOMAIN_DRIVER_API ? r.enabled_driver_apis : r.enabled_runtime_apis;
  if (c.enable(kind) != CUPTI_SUCCESS) return false;
  r.enabled_kinds.push_back(kind);
  bool any = false;
  for (uint32_t id = 1; id < api_count; ++id) {
    const char* name = nullptr;
    if (c.callback_name(domain, id, &name) != CUPTI_SUCCESS) name = nullptr;
    const bool on = chosen(id, name);
    if (enable_api(id, on ? 1 : 0) == CUPTI_SUCCESS && on) {
      enabled.push_back(id);
      any = true;
    }
  }
  return any;
}

// Everything start enabled, disabled again (at stop, or after a failed start).
void disable_all(Recorder& r) {
  const Cupti& c = r.cupti;
  for (CUpti_CallbackId id : r.enabled_driver_apis) c.enable_driver_api(id, 0);
  for (CUpti_CallbackId id : r.enabled_runtime_apis) c.enable_runtime_api(id, 0);
  for (CUpti_ActivityKind kind : r.enabled_kinds) c.disable(kind);
  r.enabled_driver_apis.clear();
  r.enabled_runtime_apis.clear();
  r.enabled_kinds.clear();
}

// One of the recorder's arrays and its size (nullptr and 0 when empty or never started).
template <class T>
const T* records(std::vector<T> Recorder::*array, size_t* count) {
  Recorder* r = g_recorder;
  if (count) *count = r ? (r->*array).size() : 0;
  return r && !(r->*array).empty() ? (r->*array).data() : nullptr;
}

}  // namespace

TANDEM_TIMELINE_EXPORT int tandem_timeline_abi_version(void) { return TANDEM_TIMELINE_ABI_VERSION; }

TANDEM_TIMELINE_EXPORT const char* tandem_timeline_cupti_soname(void) {
  static const std::string soname = "libcupti.so." + std::to_string(CUPTI_API_VERSION / 10000);
  return soname.c_str();
}

TANDEM_TIMELINE_EXPORT int tandem_timeline_start(tandem_timeline_resolve_fn resolve,
                                                 const tandem_timeline_options* options, char* why, size_t why_size) {
  if (g_recorder) {
    say(why, why_size, "the recorder was already started");
    return 1;
  }
  if (!resolve || !options) {
    say(why, why_size, "no CUPTI resolver or options");
    return 1;
  }
  try {
    auto* r = new Recorder;  // never deleted: see g_recorder
    r->options = *options;
    if (r->options.buffer_bytes < 4096) r->options.buffer_bytes = size_t(8) << 20;
    Cupti& c = r->cupti;
    const char* missing = nullptr;
    const auto need = [&](auto& fn, const char* name) {
      if (!missing && !bind(resolve, fn, name)) missing = name;
    };
    need(c.get_version, "cuptiGetVersion");
    need(c.result_string, "cuptiGetResultString");
    need(c.register_callbacks, "cuptiActivityRegisterCallbacks");
    need(c.enable, "cuptiActivityEnable");
    need(c.disable, "cuptiActivityDisable");
    need(c.flush_all, "cuptiActivityFlushAll");
    need(c.next_record, "cuptiActivityGetNextRecord");
    need(c.dropped_records, "cuptiActivityGetNumDroppedRecords");
    if (missing) {
      say(why, why_size, "CUPTI has no %s", missing);
      delete r;
      return 1;
    }
    // The records are read with this CUPTI's structures (CUpti_ActivityKernel10, ...): the CUPTI of
    // the process must be of the same major version.
    uint32_t version = 0;
    if (c.get_version(&version) != CUPTI_SUCCESS || version / 10000 != CUPTI_API_VERSION / 10000) {
      say(why, why_size, "the process's CUPTI has API version %u, tandem reads version %u's records", version,
          static_cast<unsigned>(CUPTI_API_VERSION));
      delete r;
      return 1;
    }
    // Correlation (copies in communication, marks) needs the external correlation functions and the
    // control of which APIs produce records.
    const bool can_correlate = bind(resolve, c.push_correlation, "cuptiActivityPushExternalCorrelationId") &&
                               bind(resolve, c.pop_correlation, "cuptiActivityPopExternalCorrelationId") &&
                               bind(resolve, c.enable_driver_api, "cuptiActivityEnableDriverApi") &&
                               bind(resolve, c.enable_runtime_api, "cuptiActivityEnableRuntimeApi") &&
                               bind(resolve, c.callback_name, "cuptiGetCallbackName");
    bool correlate = can_correlate && options->correlate_copies != 0;
    bool mark = can_correlate && options->mark_call != nullptr;
    g_recorder = r;
    CUptiResult result = c.register_callbacks(&buffer_requested, &buffer_completed);
    if (result != CUPTI_SUCCESS) {
      say(why, why_size, "cuptiActivityRegisterCallbacks: %s", result_text(c, result).c_str());
      g_recorder = nullptr;
      delete r;
      return 1;
    }
    struct Kind {
      CUpti_ActivityKind kind;
      bool required;
    };
    std::vector<Kind> kinds = {{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, true},
                               {CUPTI_ACTIVITY_KIND_MEMCPY, true},
                               {CUPTI_ACTIVITY_KIND_MEMSET, true},
                               {CUPTI_ACTIVITY_KIND_MEMCPY2, false}};
    if (correlate || mark) kinds.push_back({CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, false});
    for (const Kind& k : kinds) {
      result = c.enable(k.kind);
      if (result == CUPTI_SUCCESS) {
        r->enabled_kinds.push_back(k.kind);
      } else if (k.required) {
        say(why, why_size, "cuptiActivityEnable(%d): %s", static_cast<int>(k.kind), result_text(c, result).c_str());
        disable_all(*r);
        r->stopped = true;  // the registered callbacks stay; they only free what CUPTI hands back
        return 1;
      } else if (k.kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
        correlate = mark = false;
      }
    }
    // The driver's copies (when correlating) and the marks' call; the runtime's copies.
    const bool with_marks = mark;
    bool driver_ok = true;
    if (correlate || mark)
      driver_ok = enable_api_records(*r, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_CB_DOMAIN_DRIVER_API,
                                     CUPTI_DRIVER_TRACE_CBID_SIZE, [&](CUpti_CallbackId id, const char* name) {
                                       return (with_marks && id == CUPTI_DRIVER_TRACE_CBID_cuDriverGetVersion) ||
                                              (correlate && is_copy_api(name));
                                     });
    mark = mark && driver_ok;
    if (correlate)
      enable_api_records(*r, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE,
                         [](CUpti_CallbackId, const char* name) { return is_copy_api(name); });
    r->correlating.store(correlate, std::memory_order_release);
    r->marking.store(mark, std::memory_order_release);
    r->recording.store(true, std::memory_order_release);
    return 0;
  } catch (...) {
    say(why, why_size, "out of memory");
    return 1;
  }
}

TANDEM_TIMELINE_EXPORT void tandem_timeline_push_communication(void) {
  Recorder* r = g_recorder;
  if (r && r->correlating.load(std::memory_order_acquire))
    r->cupti.push_correlation(kCommunicationKind, kCommunicationId);
}

TANDEM_TIMELINE_EXPORT void tandem_timeline_pop_communication(void) {
  Recorder* r = g_recorder;
  if (r && r->correlating.load(std::memory_order_acquire)) {
    uint64_t id = 0;
    r->cupti.pop_correlation(kCommunicationKind, &id);
  }
}

TANDEM_TIMELINE_EXPORT void tandem_timeline_mark(uint64_t id) {
  Recorder* r = g_recorder;
  if (!r || id == 0 || !r->marking.load(std::memory_order_acquire)) return;
  // The call's API record follows the external correlation record that names `id`.
  r->cupti.push_correlation(kMarkKind, id);
  int version = 0;
  r->options.mark_call(&version);
  uint64_t popped = 0;
  r->cupti.pop_correlation(kMarkKind, &popped);
}

TANDEM_TIMELINE_EXPORT int tandem_timeline_stop(char* why, size_t why_size) {
  Recorder* r = g_recorder;
  if (!r) {
    say(why, why_size, "not recording");
    return 1;
  }
  if (r->stopped) return 0;
  r->stopped = true;
  // Pushes still to pop stay harmless: the kind is disabled and nothing is read any more.
  r->correlating.store(false, std::memory_order_release);
  r->marking.store(false, std::memory_order_release);
  r->recording.store(false, std::memory_order_release);
  disable_all(*r);
  // Forced: also the buffers CUPTI is still filling. The callbacks run on this thread, take the
  // mutex, and so must not find it held here.
  const CUptiResult result = r->cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  {
    const std::lock_guard<std::mutex> lock(r->mutex);
    r->closed = true;
    auto& ids = r->communication_correlations;
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  }
  if (result != CUPTI_SUCCESS) {
    say(why, why_size, "cuptiActivityFlushAll: %s", result_text(r->cupti, result).c_str());
    return 1;
  }
  return 0;
}

TANDEM_TIMELINE_EXPORT const tandem_timeline_activity* tandem_timeline_activities(size_t* count) {
  return records(&Recorder::activities, count);
}

TANDEM_TIMELINE_EXPORT const tandem_timeline_mark_record* tandem_timeline_marks(size_t* count) {
  return records(&Recorder::marks, count);
}

TANDEM_TIMELINE_EXPORT size_t tandem_timeline_name_count(void) { return g_recorder ? g_recorder->names.size() : 0; }

TANDEM_TIMELINE_EXPORT const char* tandem_timeline_name(uint32_t index) {
  Recorder* r = g_recorder;
  return r && index < r->names.size() ? r->names[index] : "";
}

TANDEM_TIMELINE_EXPORT const uint32_t* tandem_timeline_communication_correlations(size_t* count) {
  return records(&Recorder::communication_correlations, count);
}

TANDEM_TIMELINE_EXPORT void tandem_timeline_get_counts(tandem_timeline_counts* out) {
  if (!out) return;
  *out = tandem_timeline_counts{};
  Recorder* r = g_recorder;
  if (!r) return;
  const std::lock_guard<std::mutex> lock(r->mutex);
  *out = r->counts;
}
