// The summary at process exit: on stderr (unless TANDEM_LOG_LEVEL=error) and as JSON in
// TANDEM_STATS_FILE. Runs from this library's destructor, so it also reports processes that never
// touched CUDA (their runtime state was never created; the configuration is parsed here from the
// environment, which reads no file: a TANDEM_POLICY naming one is refused, see config.cpp).
//
// Who reports, so that `tandem run -- sh -c '...'` does not print one summary per shell command:
//   - a process that saw at least one launch or created an NCCL communicator;
//   - the process `tandem run` started (TANDEM_ROOT_PID), always;
//   - any process at log level info or debug.
// The stats file is written by a process that saw launches, or by the root process when no other
// process wrote it (so a child's real numbers are not replaced by the root shell's zeros).
#include "exit_report.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <string>

#include "collective_footprint.h"
#include "log.h"
#include "nccl_settings.h"
#include "runtime.h"
#include "tandem/nccl_config.h"
#include "tandem/printable.h"
#include "tandem/process_timeline_json.h"
#include "tandem/safe_file.h"
#include "timeline_session.h"

namespace tandem::preload {
namespace {

std::string describe_decision(const FunctionRecord& r) {
  const uint8_t last = r.last_outcome.load(std::memory_order_relaxed);
  if (r.kind == KernelKind::Collective) {
    const auto outcome = static_cast<ElevationOutcome>(last);
    if (outcome == ElevationOutcome::NotRequested) return "unchanged";
    if (outcome == ElevationOutcome::Elevated) return "elevated";
    return std::string("not elevated: ") + to_string(outcome);
  }
  const auto outcome = static_cast<ShapingOutcome>(last);
  if (outcome == ShapingOutcome::NotRequested) return "unchanged";
  if (outcome == ShapingOutcome::Shaped)
    return "shaped " + std::to_string(r.last_natural_blocks.load()) + "->" +
           std::to_string(r.last_shaped_blocks.load()) + " blocks/SM (" + std::to_string(r.last_dynamic_smem.load()) +
           " B dynamic smem)";
  return std::string("skipped: ") + to_string(outcome);
}

std::string describe_footprint(uint64_t packed) {
  const auto f = unpack_footprint(packed);
  if (!f) return "";
  return std::to_string(f->threads_per_block) + " threads, " + std::to_string(f->regs_per_thread) + " regs/thread, " +
         std::to_string(f->static_smem) + " B static + " + std::to_string(f->dynamic_smem) +
         " B dynamic smem, cluster " + std::to_string(f->cluster_size);
}

Snapshot take_snapshot(const PreloadConfig& config, Runtime* rt) {
  Snapshot s;
  s.pid = static_cast<long>(getpid());
  s.policy = printable(config.policy_text, 2000);  // from the environment: anything, of any length
  s.policy_valid = config.policy_valid;
  s.compute_controls = config.compute_controls();
  s.log_level = to_string(config.log_level);
  fill_counters(counters(), s);
  const OverlapPolicy settings = communicator_settings(config.policy);
  if (!uses_default_nccl_settings(settings)) s.communicator_settings = to_string(settings);
  s.copy_engine_requested = config.policy.copy_engine;
  s.nccl_variables = config.nccl_variables;
  if (!rt) return s;
  s.last_collective_footprint = describe_footprint(rt->last_collective.load(std::memory_order_relaxed));
  rt->functions.for_each([&](FunctionRecord& r) {
    const uint64_t launches = r.launches.load(std::memory_order_relaxed);
    if (launches == 0) return;
    s.kernels.push_back({r.display_name, to_string(r.kind), launches, describe_decision(r)});
  });
  std::stable_sort(s.kernels.begin(), s.kernels.end(),
                   [](const KernelSummary& a, const KernelSummary& b) { return a.launches > b.launches; });
  return s;
}

// Whether the root process may write the stats file although it launched nothing: when no file is
// there, or only the one an earlier run left (TANDEM_STATS_EARLIER). A file with another identity
// was written by a process of this run that did launch, and its numbers stay.
bool root_may_write(const PreloadConfig& config) {
  struct stat st {};
  if (::lstat(config.stats_file.c_str(), &st) != 0) return true;
  return config.stats_earlier && config.stats_earlier->first == static_cast<unsigned long long>(st.st_dev) &&
         config.stats_earlier->second == static_cast<unsigned long long>(st.st_ino);
}

// Written to a fresh temporary file and renamed (tandem/safe_file.h): a reader never sees half a
// document, and a folder, a link or a device at that path is refused, never replaced.
void write_stats_file(const std::string& path, const std::string& text) {
  const std::string error = try_write_file_atomically(path, text);
  if (!error.empty()) log(LogLevel::Warn, "stats file not written: %s", printable(error, 1000).c_str());
}

void report() {
  Runtime* rt = runtime_if_initialized();
  const PreloadConfig config = rt ? rt->config : config_from_environment();
  if (!rt) set_log_level(config.log_level);
  // NCCL communicators count as activity: a process that made one reports what was applied to it.
  const bool launched = counters().launches.load(std::memory_order_relaxed) > 0 ||
                        counters().communicators_created.load(std::memory_order_relaxed) > 0;
  const bool is_root = config.root_pid && *config.root_pid == static_cast<long>(getpid());
  const bool print = config.log_level != LogLevel::Error && (launched || is_root || config.log_level >= LogLevel::Info);
  const bool write = !config.stats_file.empty() && (launched || (is_root && root_may_write(config)));
  if (!print && !write) return;
  // A process that never launched never initialised, so its configuration problems (an invalid
  // TANDEM_POLICY...) were not logged yet; say them before the summary that reflects them.
  if (!rt && print)
    for (const auto& problem : config.problems) log(problem.level, "%s", problem.message.c_str());
  Snapshot snapshot = take_snapshot(config, rt);
  // The timeline finished at exit (timeline_session.h): its lines follow the summary, its figures go to the stats.
  const ProcessTimeline* timeline = timeline_result();
  std::string timeline_text;
  if (timeline && (timeline->state != TimelineState::NotStarted || config.log_level >= LogLevel::Info))
    timeline_text = render_timeline_text(*timeline);
  if (timeline) snapshot.timeline = process_timeline_json(*timeline);
  if (print) write_stderr(render_text(snapshot) + timeline_text);
  if (write) write_stats_file(config.stats_file, render_json(snapshot));
}

// Once per process: a program that calls _exit from one thread while another runs exit() reports once.
std::atomic<long> g_reported_by{0};

void report_once() {
  const long pid = static_cast<long>(getpid());
  if (g_reported_by.exchange(pid) == pid) return;
  try {
    report();
  } catch (...) {
    // Nothing may escape into the exiting process.
  }
}

// A destructor, not atexit(): it needs no registration (nothing runs at load time) and runs at exit
// after the program's own atexit handlers, when its launches are done.
// errno is kept: a program's atexit handlers and destructors may still read it after ours ran.
__attribute__((destructor)) void report_at_exit() {
  const int saved_errno = errno;
  report_once();
  errno = saved_errno;
}

}  // namespace

void report_before_exit_without_handlers() { report_once(); }

}  // namespace tandem::preload
