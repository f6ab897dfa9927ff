// NVTX's tool interface (nvtxDetail/nvtxTypes.h): the injection gets the callbacks export table,
// asks it for a module's function table (an array of pointers to NVTX's own function slots) and
// writes its functions into the slots it handles. Declarations only (NVTX_NO_IMPL): the interposer
// carries no NVTX instance of its own.
#define NVTX_NO_IMPL
#include "nvtx_steps.h"

#include <fnmatch.h>
#include <nvtx3/nvToolsExt.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include "wide_text.h"

namespace tandem::preload {
namespace {

struct Steps {
  std::string pattern;
  MarkFunction mark = nullptr;
  std::mutex mutex;  // everything below; taken only at a step's start and end and for start/end ids
  std::vector<NvtxStep> steps;
  std::vector<bool> closed;
  std::unordered_map<uint64_t, size_t> by_range_id;  // nvtxRangeStart ranges that are steps
  std::set<std::string> strings;                     // registered strings and domain names: stable
};

// Never destroyed: NVTX calls may come during exit.
Steps* g_steps = nullptr;
std::atomic<uint64_t> g_next_id{1};  // marks and nvtxRangeStart ids

// NVTX calls us from the program's own calls: errno stays as the program left it.
struct ErrnoKept {
  int saved = errno;
  ~ErrnoKept() { errno = saved; }
};

// Wide names are matched and named in UTF-8, as the user writes the pattern (wide_text.h).
std::string narrow(const wchar_t* text) { return utf8_of_wide(text); }

std::string message_of(const nvtxEventAttributes_t* a) {
  if (!a) return "";
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return a->message.ascii ? a->message.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE:
      return narrow(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      // Our own handles (register_string below).
      return a->message.registered ? *reinterpret_cast<const std::string*>(a->message.registered) : "";
    default:
      return "";
  }
}

bool is_step(const std::string& name) { return g_steps && fnmatch(g_steps->pattern.c_str(), name.c_str(), 0) == 0; }

// A step opens: its first mark, then its host time, so that everything issued inside comes after
// the mark. Returns its index.
size_t open_step(const std::string& name) {
  const uint64_t mark = g_next_id.fetch_add(1, std::memory_order_relaxed);
  g_steps->mark(mark);
  NvtxStep step;
  step.name = name;
  step.start_ns = realtime_ns();
  step.start_mark = mark;
  const std::lock_guard<std::mutex> lock(g_steps->mutex);
  g_steps->steps.push_back(std::move(step));
  g_steps->closed.push_back(false);
  return g_steps->steps.size() - 1;
}

void close_step(size_t index) {
  const int64_t end = realtime_ns();
  const uint64_t mark = g_next_id.fetch_add(1, std::memory_order_relaxed);
  g_steps->mark(mark);
  const std::lock_guard<std::mutex> lock(g_steps->mutex);
  g_steps->steps[index].end_ns = end;
  g_steps->steps[index].end_mark = mark;
  g_steps->closed[index] = true;
}

// Push/pop nesting per thread and domain (nullptr: the core API's ranges). An entry is the step's
// index, or -1 for a range that is not a step.
std::vector<long>& stack_of(const void* domain) {
  thread_local std::unordered_map<const void*, std::vector<long>> stacks;
  return stacks[domain];
}

int push(const void* domain, const std::string& name) {
  const ErrnoKept kept;
  std::vector<long>& stack = stack_of(domain);
  bool inside_step = false;
  for (long entry : stack) inside_step = inside_step || entry >= 0;
  long entry = -1;
  try {
    if (!inside_step && is_step(name)) entry = static_cast<long>(open_step(name));
  } catch (...) {
  }
  stack.push_back(entry);
  return static_cast<int>(stack.size()) - 1;
}

int pop(const void* domain) {
  const ErrnoKept kept;
  std::vector<long>& stack = stack_of(domain);
  if (stack.empty()) return -1;
  const long entry = stack.back();
  stack.pop_back();
  if (entry >= 0) close_step(static_cast<size_t>(entry));
  return static_cast<int>(stack.size());
}

nvtxRangeId_t start(const std::string& name) {
  const ErrnoKept kept;
  const nvtxRangeId_t id = g_next_id.fetch_add(1, std::memory_order_relaxed);
  try {
    if (is_step(name)) {
      const size_t index = open_step(name);
      const std::lock_guard<std::mutex> lock(g_steps->mutex);
      g_steps->by_range_id[id] = index;
    }
  } catch (...) {
  }
  return id;
}

void end(nvtxRangeId_t id) {
  const ErrnoKept kept;
  size_t index = 0;
  {
    const std::lock_guard<std::mutex> lock(g_steps->mutex);
    const auto it = g_steps->by_range_id.find(id);
    if (it == g_steps->by_range_id.end()) return;
    index = it->second;
    g_steps->by_range_id.erase(it);
  }
  close_step(index);
}

// A kept string, as the handle NVTX gets for it (a registered string's, or a domain's).
template <class Handle>
Handle keep_string(const std::string& text) {
  try {
    const std::lock_guard<std::mutex> lock(g_steps->mutex);
    return reinterpret_cast<Handle>(const_cast<std::string*>(&*g_steps->strings.insert(text).first));
  } catch (...) {
    return nullptr;
  }
}

// The callbacks, with NVTX's signatures (nvtxTypes.h's *_impl_fntype).
int range_push_a(const char* message) { return push(nullptr, message ? message : ""); }
int range_push_w(const wchar_t* message) { return push(nullptr, narrow(message)); }
int range_push_ex(const nvtxEventAttributes_t* a) { return push(nullptr, message_of(a)); }
int range_pop() { return pop(nullptr); }
nvtxRangeId_t range_start_a(const char* message) { return start(message ? message : ""); }
nvtxRangeId_t range_start_w(const wchar_t* message) { return start(narrow(message)); }
nvtxRangeId_t range_start_ex(const nvtxEventAttributes_t* a) { return start(message_of(a)); }
void range_end(nvtxRangeId_t id) { end(id); }
int domain_range_push_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  return push(domain, message_of(a));
}
int domain_range_pop(nvtxDomainHandle_t domain) { return pop(domain); }
nvtxRangeId_t domain_range_start_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) { return start(message_of(a)); }
void domain_range_end(nvtxDomainHandle_t, nvtxRangeId_t id) { end(id); }
nvtxStringHandle_t domain_register_string_a(nvtxDomainHandle_t, const char* text) {
  return keep_string<nvtxStringHandle_t>(text ? text : "");
}
nvtxStringHandle_t domain_register_string_w(nvtxDomainHandle_t, const wchar_t* text) {
  return keep_string<nvtxStringHandle_t>(narrow(text));
}
// A domain is named by a handle of ours (its name, kept), so that each has its own push/pop nesting.
nvtxDomainHandle_t domain_create_a(const char* name) {
  return keep_string<nvtxDomainHandle_t>(std::string("domain:") + (name ? name : ""));
}
nvtxDomainHandle_t domain_create_w(const wchar_t* name) {
  return keep_string<nvtxDomainHandle_t>("domain:" + narrow(name));
}
void domain_destroy(nvtxDomainHandle_t) {}

// `slots`: the table's size as GetModuleFunctionTable gives it, a count of entries (not bytes).
template <class Fn>
void set(NvtxFunctionTable table, unsigned int slots, unsigned int id, Fn fn) {
  if (id < slots && table[id]) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace

int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

bool install_nvtx_step_callbacks(void* get_export_table, const std::string& pattern, MarkFunction mark) {
  if (!get_export_table || !mark) return false;
  const auto get = reinterpret_cast<NvtxGetExportTableFunc_t>(get_export_table);
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (!callbacks || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) || !callbacks->GetModuleFunctionTable)
    return false;
  if (!g_steps) {
    auto* steps = new Steps;  // never deleted: see g_steps
    steps->pattern = pattern;
    steps->mark = mark;
    g_steps = steps;
  }
  NvtxFunctionTable core = nullptr, core2 = nullptr;
  unsigned int core_slots = 0, slots = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_slots) || !core) return false;
  set(core, core_slots, NVTX_CBID_CORE_RangePushA, &range_push_a);
  set(core, core_slots, NVTX_CBID_CORE_RangePushW, &range_push_w);
  set(core, core_slots, NVTX_CBID_CORE_RangePushEx, &range_push_ex);
  set(core, core_slots, NVTX_CBID_CORE_RangePop, &range_pop);
  set(core, core_slots, NVTX_CBID_CORE_RangeStartA, &range_start_a);
  set(core, core_slots, NVTX_CBID_CORE_RangeStartW, &range_start_w);
  set(core, core_slots, NVTX_CBID_CORE_RangeStartEx, &range_start_ex);
  set(core, core_slots, NVTX_CBID_CORE_RangeEnd, &range_end);
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &slots) && core2) {
    set(core2, slots, NVTX_CBID_CORE2_DomainRangePushEx, &domain_range_push_ex);
    set(core2, slots, NVTX_CBID_CORE2_DomainRangePop, &domain_range_pop);
    set(core2, slots, NVTX_CBID_CORE2_DomainRangeStartEx, &domain_range_start_ex);
    set(core2, slots, NVTX_CBID_CORE2_DomainRangeEnd, &domain_range_end);
    set(core2, slots, NVTX_CBID_CORE2_DomainRegisterStringA, &domain_register_string_a);
    set(core2, slots, NVTX_CBID_CORE2_DomainRegisterStringW, &domain_register_string_w);
    set(core2, slots, NVTX_CBID_CORE2_DomainCreateA, &domain_create_a);
    set(core2, slots, NVTX_CBID_CORE2_DomainCreateW, &domain_create_w);
    set(core2, slots, NVTX_CBID_CORE2_DomainDestroy, &domain_destroy);
  }
  return true;
}

std::vector<NvtxStep> closed_nvtx_steps(uint64_t* still_open) {
  std::vector<NvtxStep> out;
  if (still_open) *still_open = 0;
  if (!g_steps) return out;
  const std::lock_guard<std::mutex> lock(g_steps->mutex);
  for (size_t i = 0; i < g_steps->steps.size(); ++i) {
    if (g_steps->closed[i])
      out.push_back(g_steps->steps[i]);
    else if (still_open)
      ++*still_open;
  }
  return out;
}

}  // namespace tandem::preload
