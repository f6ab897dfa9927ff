#include "run_timeline.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "program_tools/job_timeline.h"
#include "program_tools/timeline_files.h"
#include "program_tools/trace_assembly.h"
#include "ranks/file_rendezvous.h"
#include "ranks/launch_env.h"
#include "tandem/error.h"
#include "tandem/printable.h"
#include "tandem/run_contract.h"
#include "tandem/safe_file.h"
#include "tandem/text.h"

namespace tandem::cli {
namespace {

namespace fs = std::filesystem;
namespace env = tandem::preload::env;

// A file at most this much older than this run's start still counts as this job's (file systems
// keep whole seconds).
constexpr double kClockSlackS = 2;

// How long the last rank under tandem run waits, once its program is done, for a rank of the job that
// has not started under tandem run yet, before it reports the ranks it has. Every rank under tandem
// run marks itself started before its program starts, so only a rank started later than this one
// ended can be missed.
constexpr double kOtherRanksWaitS = 3;

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
    if (entry.path().filename().string().rfind("started-", 0) != 0 && modified_s(entry.path()) < since_s - kClockSlackS)
      fs::remove(entry.path(), ec);
}

// The outputs asked for, as "--trace FILE and --timeline-json FILE".
std::string outputs_asked(const RunTimeline& t) {
  std::string out;
  if (t.trace) out += "--trace " + t.trace_file;
  if (!t.json_file.empty()) out += (out.empty() ? "" : " and ") + std::string("--timeline-json ") + t.json_file;
  return out;
}

// No process wrote a timeline: the program was killed (SIGKILL, SIGTERM, abort) or ended before its
// exit handlers ran, or never used the GPU. An empty document would replace an earlier file with a
// valid-looking nothing: the files are left as they are, and one line says why.
void report_nothing_recorded(const RunTimeline& t, int exit_status) {
  const std::string outputs = outputs_asked(t);
  if (outputs.empty()) return;
  std::error_code ec;
  const bool earlier =
      (t.trace && fs::exists(t.trace_file, ec)) || (!t.json_file.empty() && fs::exists(t.json_file, ec));
  const std::string how = exit_status > 128 ? "the program was killed by signal " + std::to_string(exit_status - 128)
                                            : "no process of the program wrote a timeline (no GPU work, or it left "
                                              "before its exit handlers ran)";
  std::fprintf(stderr, "tandem run: timeline: nothing recorded: %s; %s not written%s\n", how.c_str(),
               printable(outputs, 2000).c_str(), earlier ? " (the earlier file is kept as it was)" : "");
}

// `waited_for`: the ranks of a launcher's job that did not finish under tandem run (finish_timeline).
// The ranks that marked themselves done (done-<pid> holds the rank) since this run started.
std::set<int> done_ranks(const std::string& folder, double since_s) {
  std::set<int> ranks;
  for (const fs::path& p : fresh_files(folder, "done-", since_s)) {
    try {
      ranks.insert(std::stoi(read_small_regular_file(p.string(), 64)));
    } catch (const std::exception&) {
    }
  }
  return ranks;
}

// Whether another tandem run of this job on this node is still running its program: its started-<pid>
// is there, and that process is alive (a stale marker of a process that died is removed).
bool other_tandem_run_running(const std::string& folder) {
  std::error_code ec;
  bool running = false;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("started-", 0) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + 8, &end, 10);
    if (!end || *end != '\0' || pid <= 0 || pid == static_cast<long>(::getpid())) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM)
      running = true;
    else
      fs::remove(entry.path(), ec);
  }
  return running;
}

// The ranks of this node that never marked themselves done: "rank 1 of 2", "ranks 1, 3 of 4"; or
// "2 of this node's 4 ranks" where the launcher does not say which ranks are this node's.
std::string missing_ranks(const RunTimeline& t, const std::set<int>& done) {
  const int missing_count = t.ranks_here - static_cast<int>(done.size());
  if (t.ranks_here != t.world_size)
    return std::to_string(missing_count) + " of this node's " + std::to_string(t.ranks_here) + " ranks";
  std::vector<std::string> missing;
  for (int r = 0; r < t.world_size && missing.size() < 32; ++r)
    if (!done.count(r)) missing.push_back(std::to_string(r));
  const int more = missing_count - static_cast<int>(missing.size());
  return (missing.size() == 1 ? "rank " : "ranks ") + join(missing, ", ") +
         (more > 0 ? " and " + std::to_string(more) + " more" : "") + " of " + std::to_string(t.world_size);
}

void report(const RunTimeline& t, int exit_status, const std::string& waited_for = "") {
  const std::vector<ProcessTimeline> processes = program_tools::read_timeline_folder(t.folder);
  if (!waited_for.empty())
    std::fprintf(stderr,
                 "tandem run: job timeline: waited for %s, which did not run under tandem run on this node; the "
                 "timeline has the ranks that did\n",
                 waited_for.c_str());
  if (processes.empty()) return report_nothing_recorded(t, exit_status);
  const program_tools::JobTimeline job = program_tools::job_timeline(processes);
  // One process printed its own figures at exit; the job's lines add something with several.
  if (processes.size() > 1) std::fputs(program_tools::job_timeline_text(job).c_str(), stderr);
  if (!t.json_file.empty()) {
    const std::string why =
        try_write_file_atomically(t.json_file, program_tools::job_timeline_document(processes, job).dump(1) + "\n");
    if (!why.empty()) warn("timeline: " + why);
  }
  if (!t.trace) return;
  const nlohmann::json about = program_tools::job_trace_about(processes, job, t.step_range);
  const size_t events = program_tools::assemble_trace(t.folder, t.trace_file, about);
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
    // The last rank of another job removes the user's folder of job folders when it empties it
    // (finish_timeline): made between that rank's removal and ours, a part may vanish once; again.
    for (int attempt = 1;; ++attempt) {
      try {
        make_private_folder(t.folder, {"timeline folder", "read the job's timelines", "set TMPDIR to another folder"});
        break;
      } catch (const UserError&) {
        throw;
      } catch (const Error&) {
        if (attempt == 3) throw;
      }
    }
    // This node's ranks, when the launcher says how many; else the world (one node).
    t.ranks_here =
        launch->local_world_size > 0 ? std::min(launch->local_world_size, launch->world_size) : launch->world_size;
    // Running: the last of this job's tandem runs to finish reports the job (finish_timeline).
    const std::string pid = std::to_string(static_cast<long>(::getpid()));
    const std::string why = try_write_file_atomically(t.folder + "/started-" + pid, std::to_string(t.rank) + "\n");
    if (!why.empty()) warn("timeline: cannot mark this rank started: " + why);
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
  // range records give the steps (preload/timeline_session.h). A tool's own injection is left in place.
  if (t.enabled && (!existing_nvtx_injection || !*existing_nvtx_injection))
    changes.emplace_back(env::kNvtxInjection, library);
  return changes;
}

void finish_timeline(const RunTimeline& t, int exit_status) {
  if (!t.enabled) return;
  try {
    if (!t.shared) {
      report(t, exit_status);
      std::error_code ec;
      fs::remove_all(t.folder, ec);
      return;
    }
    remove_stale_files(t.folder, t.started_s);
    // This rank's program is done: every file its processes write is in the folder.
    const std::string pid = std::to_string(static_cast<long>(::getpid()));
    const std::string why = try_write_file_atomically(t.folder + "/done-" + pid, std::to_string(t.rank) + "\n");
    ::unlink((t.folder + "/started-" + pid).c_str());
    if (!why.empty()) {
      warn("timeline: cannot mark this rank done: " + why);
      return;
    }
    // The last rank under tandem run reports the job: once every rank of the node is done, or, when
    // some never ran under tandem run (a launcher's other ranks started without it), once no other
    // tandem run of the job is still running and none started during a short wait.
    std::string waited_for;
    for (const double deadline = now_s() + kOtherRanksWaitS;;) {
      const std::set<int> done = done_ranks(t.folder, t.started_s);
      if (static_cast<int>(done.size()) >= t.ranks_here) break;
      if (other_tandem_run_running(t.folder)) return;  // it reports when it is done
      if (now_s() >= deadline) {
        waited_for = missing_ranks(t, done);
        break;
      }
      ::usleep(100 * 1000);
    }
    // The first to claim the job reports it.
    const std::string claim = t.folder + "/claimed";
    const int fd = ::open(claim.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return;
    ::close(fd);
    report(t, exit_status, waited_for);
    std::error_code ec;
    fs::remove_all(t.folder, ec);
    fs::remove(fs::path(t.folder).parent_path(), ec);  // the user's folder of job folders, when it is empty
  } catch (const std::exception& e) {
    warn(std::string("timeline: ") + e.what());
  }
}

}  // namespace tandem::cli
