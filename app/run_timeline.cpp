#include "run_timeline.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "harness/program_timeline.h"
#include "ranks/file_rendezvous.h"
#include "ranks/launch_env.h"
#include "tandem/error.h"
#include "tandem/printable.h"
#include "tandem/run_contract.h"
#include "tandem/safe_file.h"

namespace tandem::cli {
namespace {

namespace fs = std::filesystem;
namespace env = tandem::preload::env;

// A file at most this much older than this run's start still counts as this job's (file systems
// keep whole seconds).
constexpr double kClockSlackS = 2;

double now_s() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

double modified_s(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return 0;
  return static_cast<double>(st.st_mtim.tv_sec) + static_cast<double>(st.st_mtim.tv_nsec) / 1e9;
}

void warn(const std::string& text) { std::fprintf(stderr, "tandem run: warning: %s\n", printable(text, 2000).c_str()); }

// This tandem run as one rank of a launcher's job, or nothing (one process, or a launcher's world of
// one). Malformed launcher variables are the benchmark's to refuse, not tandem run's: none then.
std::optional<bench::LaunchEnv> launcher_rank() {
  try {
    const bench::LaunchEnv launch = bench::detect_launch("auto", bench::process_environment());
    if (launch.is_process_mode() && launch.world_size > 1) return launch;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// The files of this job in a shared folder: those written since this run started.
std::vector<fs::path> fresh_files(const std::string& folder, const std::string& prefix, double since_s) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0 && modified_s(entry.path()) >= since_s - kClockSlackS)
      out.push_back(entry.path());
  }
  return out;
}

// Files of an earlier job with the same key (one that failed before its last rank finished) must
// not count: they are removed before the aggregation reads the folder.
void remove_stale_files(const std::string& folder, double since_s) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec))
    if (modified_s(entry.path()) < since_s - kClockSlackS) fs::remove(entry.path(), ec);
}

void report(const RunTimeline& t) {
  const std::vector<bench::ProcessTimelineFile> processes = bench::read_timeline_folder(t.folder);
  const bench::JobTimeline job = bench::job_timeline(processes);
  // One process printed its own figures at exit; the job's lines add something with several.
  if (processes.size() > 1) std::fputs(bench::job_timeline_text(job).c_str(), stderr);
  if (!t.json_file.empty()) {
    nlohmann::json doc = {{"tool", "tandem run"}, {"job", bench::job_timeline_json(job)}};
    nlohmann::json list = nlohmann::json::array();
    for (const auto& p : processes)
      list.push_back({{"pid", p.pid},
                      {"rank", p.rank ? nlohmann::json(*p.rank) : nlohmann::json()},
                      {"host", p.host},
                      {"state", p.state},
                      {"reason", p.reason.empty() ? nlohmann::json() : nlohmann::json(p.reason)}});
    doc["processes"] = list;
    const std::string why = try_write_file_atomically(t.json_file, doc.dump(1) + "\n");
    if (!why.empty()) warn("timeline: " + why);
  }
  if (!t.trace) return;
  const nlohmann::json about = {{"tool", "tandem run"},
                                {"step_range", t.step_range},
                                {"processes", processes.size()},
                                {"job", bench::job_timeline_json(job)}};
  const size_t events = bench::assemble_trace(t.folder, t.trace_file, about);
  std::fprintf(stderr, "tandem run: trace of %zu events from %zu process%s written to %s\n", events, processes.size(),
               processes.size() == 1 ? "" : "es", printable(t.trace_file, 1000).c_str());
}

}  // namespace

RunTimeline prepare_timeline(const RunOptions& options) {
  RunTimeline t;
  t.trace = !options.trace_file.empty();
  t.enabled = options.timeline || t.trace || !options.step_range.empty() || !options.timeline_json.empty();
  if (!t.enabled) return t;
  t.step_range = options.step_range;
  t.started_s = now_s();
  t.trace_file = absolute_path(options.trace_file);
  t.json_file = absolute_path(options.timeline_json);
  // Each document its own file: of two outputs on one file, the later would replace the other. A
  // --stats name with %p is one file per process, never one of these.
  const std::string stats = options.stats_file.find("%p") == std::string::npos ? options.stats_file : "";
  checking_input([&] {
    require_writable_outputs({{"--stats", stats}, {"--trace", t.trace_file}, {"--timeline-json", t.json_file}});
  });
  if (const auto launch = launcher_rank()) {
    // One folder per job and user, shared by this node's ranks (see run_timeline.h).
    t.shared = true;
    t.world_size = launch->world_size;
    t.rank = launch->rank;
    const std::string key = bench::rendezvous_key(*launch, bench::process_environment());
    t.folder =
        (fs::path(temporary_folder()) / ("tandem-timeline-" + std::to_string(static_cast<long>(::getuid()))) / key)
            .string();
    make_private_folder(t.folder, {"timeline folder", "read the job's timelines", "set TMPDIR to another folder"});
    return t;
  }
  t.folder = make_temporary_folder("tandem-timeline-", "the timeline");
  return t;
}

std::vector<EnvChange> timeline_environment(const RunTimeline& t, const std::string& library,
                                            const char* existing_nvtx_injection) {
  std::vector<EnvChange> changes;
  const auto when = [&](bool on, const std::string& value) {
    return on ? std::optional<std::string>(value) : std::nullopt;
  };
  changes.emplace_back(env::kTimeline, when(t.enabled, t.trace ? "trace" : "on"));
  changes.emplace_back(env::kTimelineDir, when(t.enabled, t.folder));
  changes.emplace_back(env::kStepRange, when(t.enabled && !t.step_range.empty(), t.step_range));
  // NVTX reads this at the program's first NVTX call: the interposer then hands NVTX to CUPTI, whose
  // range records give the steps (preload/timeline.h). A tool's own injection is left in place.
  if (t.enabled && (!existing_nvtx_injection || !*existing_nvtx_injection))
    changes.emplace_back(env::kNvtxInjection, library);
  return changes;
}

void finish_timeline(const RunTimeline& t) {
  if (!t.enabled) return;
  try {
    if (!t.shared) {
      report(t);
      std::error_code ec;
      fs::remove_all(t.folder, ec);
      return;
    }
    remove_stale_files(t.folder, t.started_s);
    // This rank's program is done: every file its processes write is in the folder.
    const std::string done = t.folder + "/done-" + std::to_string(static_cast<long>(::getpid()));
    const std::string why = try_write_file_atomically(done, std::to_string(t.rank) + "\n");
    if (!why.empty()) {
      warn("timeline: cannot mark this rank done: " + why);
      return;
    }
    if (static_cast<int>(fresh_files(t.folder, "done-", t.started_s).size()) < t.world_size) return;
    // Every rank is done; the first to claim the job reports it.
    const std::string claim = t.folder + "/claimed";
    const int fd = ::open(claim.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return;
    ::close(fd);
    report(t);
    std::error_code ec;
    fs::remove_all(t.folder, ec);
  } catch (const std::exception& e) {
    warn(std::string("timeline: ") + e.what());
  }
}

}  // namespace tandem::cli
