#include "timeline_session.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "log.h"
#include "nvtx_steps.h"
#include "real_symbols.h"
#include "runtime.h"
#include "tandem/printable.h"
#include "tandem/process_timeline_json.h"
#include "tandem/safe_file.h"

namespace tandem::preload {
namespace {

// Where the timeline stands. The launch path reads it with one relaxed load.
enum State : int {
  kUntouched = 0,  // nothing decided yet
  kStarting = 1,   // one thread is starting it
  kRecording = 2,
  kDone = 3,  // decided for good: off, stepped aside, failed, or stopped at exit
};
std::atomic<int> g_state{kUntouched};
bool g_stepped_aside = false;  // another tool owns CUPTI (rather than a failure)
std::atomic<bool> g_program_owns_cupti{false};
std::mutex g_mutex;  // start, hand-over and finish, never the launch path

constexpr const char* kRecorderLibrary = "libtandem_timeline.so";
constexpr size_t kBufferBytes = size_t(8) << 20;
// 48 bytes each: 768 MiB at most. Beyond it records are counted as lost, never kept.
constexpr uint64_t kMaxRecords = uint64_t(16) << 20;

// The recorder's C ABI (TANDEM_TIMELINE_FUNCTIONS), resolved once: one field per function, named after
// it (`start` is tandem_timeline_start).
struct Recorder {
#define TANDEM_RECORDER_FUNCTION_FIELD(name) decltype(&tandem_timeline_##name) name = nullptr;
  TANDEM_TIMELINE_FUNCTIONS(TANDEM_RECORDER_FUNCTION_FIELD)
#undef TANDEM_RECORDER_FUNCTION_FIELD
};

// Set once before g_state becomes kRecording; never cleared (a region that read them keeps working
// after the stop, when the recorder ignores it).
Recorder g_recorder;
void* g_cupti = nullptr;
std::atomic<bool> g_regions{false};  // CommunicationRegion pushes only while recording
long g_recording_pid = 0;
long g_parent_pid = 0;    // when the timeline started: later the parent may have exited
bool g_recorded = false;  // the recorder ran (its records are worth reading)
std::string g_reason;     // why the timeline did not record, or stopped early
std::optional<int64_t> g_recorded_until;
bool g_finished = false;
ProcessTimeline* g_result = nullptr;  // never deleted: the exit report reads it during exit

std::string real_path(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : path;
}

std::string host_name() {
  char buf[256] = "";
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

// Every function of the list from `handle`; false when one is missing.
bool bind_functions(void* handle, Recorder& r) {
  bool all = true;
#define TANDEM_BIND_RECORDER_FUNCTION(name) all = bind_function(handle, r.name, "tandem_timeline_" #name) && all;
  TANDEM_TIMELINE_FUNCTIONS(TANDEM_BIND_RECORDER_FUNCTION)
#undef TANDEM_BIND_RECORDER_FUNCTION
  return all;
}

// "" when loaded, else why not.
std::string load_recorder() {
  const std::string path = own_folder() + "/" + kRecorderLibrary;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return "cannot load " + path + ": " + take_dl_error();
  Recorder& r = g_recorder;
  if (!bind_functions(handle, r) || r.abi_version() != TANDEM_TIMELINE_ABI_VERSION)
    return path + " is not the timeline recorder of this interposer (another version)";
  return "";
}

int collect_cupti_name(dl_phdr_info* info, size_t, void* data) {
  const std::string name = info->dlpi_name ? info->dlpi_name : "";
  const std::string base = name.substr(name.rfind('/') == std::string::npos ? 0 : name.rfind('/') + 1);
  if (base.rfind("libcupti.so", 0) == 0) static_cast<std::vector<std::string>*>(data)->push_back(name);
  return 0;
}

// The one CUPTI of the process: the copy the program loaded under the recorder's SONAME (PyTorch's,
// from its nvidia-cuda-cupti wheel), else, when no CUPTI at all is loaded, the one the loader finds
// by that name (LD_LIBRARY_PATH, its cache) or the toolkit's that tandem was built with. A CUPTI of
// another version already in the process is never joined by a second one. "" when bound.
std::string bind_cupti(std::string* file) {
  const std::string soname = g_recorder.cupti_soname();
  void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!handle) {
    (void)take_dl_error();
    std::vector<std::string> loaded;
    dl_iterate_phdr(&collect_cupti_name, &loaded);
    if (!loaded.empty())
      return "the program loaded " + loaded.front() + ", not " + soname + ": a second CUPTI is never loaded";
    handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      (void)take_dl_error();
      const std::string built_with = std::string(TANDEM_CUPTI_BUILD_DIR) + "/" + soname;
      handle = dlopen(built_with.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle)
        return "no " + soname + " found (LD_LIBRARY_PATH, the loader's cache, " + built_with + "): " + take_dl_error();
    }
  }
  g_cupti = handle;
  *file = file_of(real_dlsym()(handle, "cuptiGetVersion"));
  return "";
}

void* resolve_cupti(const char* symbol) { return g_cupti ? real_dlsym()(g_cupti, symbol) : nullptr; }

// The call a mark makes (tandem_timeline_options::mark_call): the driver's cuDriverGetVersion, looked
// up in the loaded driver at each call (a program's NVTX may start before CUDA: no mark then, and
// the step keeps its host times).
int mark_call(int* version) {
  using DriverGetVersion = int (*)(int*);
  static std::atomic<DriverGetVersion> fn{nullptr};
  DriverGetVersion f = fn.load(std::memory_order_acquire);
  if (!f) {
    if (void* libcuda = loaded_libcuda())
      f = reinterpret_cast<DriverGetVersion>(real_dlsym()(libcuda, "cuDriverGetVersion"));
    if (!f) return 0;
    fn.store(f, std::memory_order_release);
  }
  return f(version);
}

// Why the timeline must not take CUPTI in this process, or "".
std::string reason_to_step_aside(const PreloadConfig& c) {
  if (!c.cuda_injection.empty())
    return "a tool injected into CUDA owns CUPTI (CUDA_INJECTION64_PATH=" + printable(c.cuda_injection, 1000) +
           ": Nsight Systems, Nsight Compute or another profiler)";
  if (!c.nvtx_injection.empty() && real_path(c.nvtx_injection) != real_path(own_file()))
    return "another tool takes NVTX and with it CUPTI (NVTX_INJECTION64_PATH=" + printable(c.nvtx_injection, 1000) +
           ")";
  if (g_program_owns_cupti.load(std::memory_order_acquire))
    return "the program's own profiler (torch.profiler's Kineto or another CUPTI client) registered CUPTI's "
           "activity callbacks first";
  return "";
}

void at_exit();

// Under g_mutex, state kStarting. Returns the state reached.
int start_locked(const PreloadConfig& c) {
  if (c.timeline == TimelineMode::Off) return kDone;
  g_reason = reason_to_step_aside(c);
  if (!g_reason.empty()) {
    g_stepped_aside = true;
    log(LogLevel::Warn, "timeline steps aside: %s", g_reason.c_str());
    return kDone;
  }
  g_reason = load_recorder();
  std::string cupti_file;
  if (g_reason.empty()) g_reason = bind_cupti(&cupti_file);
  if (!g_reason.empty()) {
    log(LogLevel::Warn, "timeline not recorded: %s", g_reason.c_str());
    return kDone;
  }
  tandem_timeline_options options{};
  options.buffer_bytes = kBufferBytes;
  options.max_records = kMaxRecords;
  options.correlate_copies = 1;
  options.mark_call = c.step_range.empty() ? nullptr : &mark_call;
  char why[512] = "";
  if (g_recorder.start(&resolve_cupti, &options, why, sizeof why) != 0) {
    g_reason = std::string("CUPTI (") + cupti_file + ") refused: " + why;
    log(LogLevel::Warn, "timeline not recorded: %s", g_reason.c_str());
    return kDone;
  }
  g_recording_pid = static_cast<long>(getpid());
  g_parent_pid = static_cast<long>(getppid());
  g_recorded = true;
  g_regions.store(true, std::memory_order_release);
  timeline_detail::recording.store(true, std::memory_order_relaxed);
  // Registered now, after the CUDA runtime's own exit handler: ours runs first, while CUDA and CUPTI
  // are still up, and before the library destructors (the exit report) that read the result.
  std::atexit(&at_exit);
  log(LogLevel::Info, "timeline recording through %s", cupti_file.c_str());
  if (!c.step_range.empty() && c.nvtx_injection.empty())
    log(LogLevel::Warn,
        "timeline: NVTX_INJECTION64_PATH is not set, so no NVTX range reaches tandem and "
        "--step-range '%s' matches nothing: `tandem run --timeline` sets it",
        printable(c.step_range, 1000).c_str());
  return kRecording;
}

// Under g_mutex, recording: every record up to now flushed; no CUPTI call after this.
void stop_locked() {
  g_regions.store(false, std::memory_order_release);
  timeline_detail::recording.store(false, std::memory_order_relaxed);
  char why[512] = "";
  if (g_recorder.stop(why, sizeof why) != 0) log(LogLevel::Warn, "timeline: stopping CUPTI: %s", why);
}

RawTimeline copy_records() {
  RawTimeline raw;
  size_t n = 0;
  if (const tandem_timeline_activity* a = g_recorder.activities(&n)) raw.activities.assign(a, a + n);
  std::unordered_map<uint64_t, uint32_t> correlation_of_mark;
  if (const tandem_timeline_mark_record* m = g_recorder.marks(&n))
    for (size_t i = 0; i < n; ++i) correlation_of_mark[m[i].id] = m[i].correlation;
  const auto correlation = [&](uint64_t mark) {
    const auto it = correlation_of_mark.find(mark);
    return it == correlation_of_mark.end() ? 0u : it->second;
  };
  for (const NvtxStep& s : closed_nvtx_steps(&raw.open_steps)) {
    // After a hand-over to the program's profiler nothing more was recorded: later steps are not ours.
    if (g_recorded_until && s.start_ns > *g_recorded_until) continue;
    raw.steps.push_back(RawStep{s.name, s.start_ns, s.end_ns, correlation(s.start_mark), correlation(s.end_mark)});
  }
  const size_t names = g_recorder.name_count();
  raw.names.reserve(names);
  for (size_t i = 0; i < names; ++i) raw.names.emplace_back(g_recorder.name(static_cast<uint32_t>(i)));
  if (const uint32_t* c = g_recorder.communication_correlations(&n)) raw.communication_correlations.assign(c, c + n);
  g_recorder.get_counts(&raw.counts);
  return raw;
}

// Under a shape policy, the sizes each launched kernel ran with, by kind, merged by name (a kernel
// loaded in two modules or contexts has two records).
LaunchSizesByName launch_sizes(const Runtime& rt) {
  LaunchSizesByName out;
  rt.functions.for_each([&](FunctionRecord& record) {
    if (record.name.empty()) return;
    for (int kind = 0; kind < kLaunchKinds; ++kind) {
      const LaunchSmemValues& noted = record.launch_smem[static_cast<size_t>(kind)];
      const std::vector<uint32_t> values = noted.values();
      if (values.empty() && !noted.overflowed()) continue;
      LaunchSizes& sizes = out[record.name];
      for (const uint32_t v : values)
        if (std::find(sizes.sizes[kind].begin(), sizes.sizes[kind].end(), v) == sizes.sizes[kind].end())
          sizes.sizes[kind].push_back(v);
      sizes.overflowed[kind] = sizes.overflowed[kind] || noted.overflowed();
    }
  });
  return out;
}

void write_files(const PreloadConfig& c, const ProcessTimeline& t, const RawTimeline& raw) {
  if (c.timeline_dir.empty()) return;
  const std::string base = c.timeline_dir + "/";
  const std::string why =
      try_write_file_atomically(base + timeline_file_name(t.pid), process_timeline_json(t).dump(1) + "\n");
  if (!why.empty()) log(LogLevel::Warn, "timeline file not written: %s", printable(why, 1000).c_str());
  if (c.timeline != TimelineMode::Trace || raw.activities.empty()) return;
  // Renamed into place once complete: `tandem run` never reads half of it.
  const std::string part = base + trace_part_name(t.pid), partial = part + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    write_trace_events(out, raw, t);
    if (!out) {
      log(LogLevel::Warn, "timeline trace events not written to %s", partial.c_str());
      ::unlink(partial.c_str());
      return;
    }
  }
  if (::rename(partial.c_str(), part.c_str()) != 0) ::unlink(partial.c_str());
}

// Under g_mutex: the result, once.
void finish_locked() {
  if (g_finished) return;
  g_finished = true;
  Runtime* rt = runtime_if_initialized();
  const PreloadConfig config = rt ? rt->config : config_from_environment();
  if (config.timeline == TimelineMode::Off) return;
  const long pid = static_cast<long>(getpid());
  if (g_recording_pid != 0 && g_recording_pid != pid) return;  // a forked child: the records are the parent's
  if (g_state.load(std::memory_order_acquire) == kRecording) stop_locked();
  g_state.store(kDone, std::memory_order_release);
  RawTimeline raw;
  auto* t = new ProcessTimeline;
  if (g_recorded) {
    raw = copy_records();
    if (rt && config.shapes_compute()) raw.launch_sizes = launch_sizes(*rt);
    *t = build_timeline(raw, config.step_range);
    if (g_recorded_until) {
      t->state = TimelineState::SteppedAside;
      t->recorded_until_ns = g_recorded_until;
    }
  } else {
    t->state = g_reason.empty()  ? TimelineState::NotStarted
               : g_stepped_aside ? TimelineState::SteppedAside
                                 : TimelineState::Failed;
  }
  t->reason = g_reason;
  t->step_range = config.step_range;
  t->pid = pid;
  t->parent_pid = g_parent_pid ? g_parent_pid : static_cast<long>(getppid());
  t->rank = config.rank;
  t->host = host_name();
  g_result = t;
  if (t->state != TimelineState::NotStarted) write_files(config, *t, raw);
}

// errno kept: the program's exit handlers that run after this one may read it.
void at_exit() {
  const int saved_errno = errno;
  try {
    const std::lock_guard<std::mutex> lock(g_mutex);
    finish_locked();
  } catch (...) {
  }
  errno = saved_errno;
}

}  // namespace

namespace timeline_detail {
std::atomic<bool> undecided{true};
std::atomic<bool> recording{false};

void decide() {
  undecided.store(false, std::memory_order_relaxed);
  Runtime& rt = runtime();
  if (rt.config.timeline == TimelineMode::Off) {
    int expected = kUntouched;
    g_state.compare_exchange_strong(expected, kDone, std::memory_order_acq_rel);
    return;
  }
  // One thread starts it; the others (and a launch made while starting) go on unrecorded meanwhile.
  int expected = kUntouched;
  if (!g_state.compare_exchange_strong(expected, kStarting, std::memory_order_acq_rel)) return;
  try {
    const std::lock_guard<std::mutex> lock(g_mutex);
    g_state.store(start_locked(rt.config), std::memory_order_release);
  } catch (...) {
    g_state.store(kDone, std::memory_order_release);
  }
}
}  // namespace timeline_detail

void timeline_yield_cupti() {
  try {
    g_program_owns_cupti.store(true, std::memory_order_release);
    // Waits for a start in flight, so that the hand-over sees its result.
    const std::lock_guard<std::mutex> lock(g_mutex);
    if (g_state.load(std::memory_order_acquire) != kRecording) return;
    stop_locked();
    g_recorded_until = realtime_ns();
    g_reason = "the program's profiler took CUPTI (cuptiActivityRegisterCallbacks)";
    g_state.store(kDone, std::memory_order_release);
    log(LogLevel::Warn,
        "timeline: the program's profiler registered CUPTI's activity callbacks; tandem's recording stops here "
        "and hands CUPTI over (its figures cover the run until now)");
  } catch (...) {
  }
}

CommunicationRegion::CommunicationRegion() {
  if (!g_regions.load(std::memory_order_acquire)) return;
  g_recorder.push_communication();
  pushed_ = true;
}

CommunicationRegion::~CommunicationRegion() {
  if (pushed_) g_recorder.pop_communication();
}

int timeline_nvtx_injection(void* get_export_table) {
  thread_local bool inside = false;
  if (inside) return 0;
  inside = true;
  int result = 0;
  try {
    timeline_note_activity();
    // Steps asked for and recording: tandem's callbacks take this NVTX instance's ranges. Else NVTX
    // is told no tool is there, and its calls stay empty as without an injection.
    const PreloadConfig& c = runtime().config;
    if (g_state.load(std::memory_order_acquire) == kRecording && !c.step_range.empty())
      result = install_nvtx_step_callbacks(get_export_table, c.step_range, g_recorder.mark) ? 1 : 0;
  } catch (...) {
    result = 0;
  }
  inside = false;
  return result;
}

const ProcessTimeline* timeline_result() {
  try {
    const std::lock_guard<std::mutex> lock(g_mutex);
    finish_locked();
  } catch (...) {
  }
  return g_result;
}

}  // namespace tandem::preload

// NVTX looks this name up in the library NVTX_INJECTION64_PATH names (nvtxInit.h); exported by the
// version script (version_script.in).
// errno as the program left it: NVTX calls this from the program's first NVTX call.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(void* get_export_table) {
  const int saved_errno = errno;
  const int result = tandem::preload::timeline_nvtx_injection(get_export_table);
  errno = saved_errno;
  return result;
}
