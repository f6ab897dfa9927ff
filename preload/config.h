#pragma once
// The interposer's configuration, from the TANDEM_* environment variables (tandem/run_contract.h). This is
// the one module that reads them. Parsing is pure (the environment comes in as a lookup function),
// so every variable and every bad value is tested on CPU.
//
// Bad values never stop the process: each one becomes a line in `problems` (logged once at
// initialisation) and the variable keeps its default; an invalid TANDEM_POLICY disables every
// control.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tandem/policy.h"

namespace tandem::preload {

enum class LogLevel { Error = 0, Warn = 1, Info = 2, Debug = 3 };
enum class TimelineMode { Off, On, Trace };

struct Problem {
  LogLevel level;  // Error: invalid policy; Warn: a bad value or a token without effect; Info: a note
  std::string message;
};

struct PreloadConfig {
  std::string policy_text;  // as given (or the default)
  bool policy_valid = true;
  OverlapPolicy policy;  // what the interposer applies: priority, shape, sm-target, nccl-* (copy-engine: counted)
  LogLevel log_level = LogLevel::Warn;
  std::vector<std::string> include_patterns;  // empty: every kernel
  std::vector<std::string> exclude_patterns;
  std::string stats_file;  // "" for none; "%p" already replaced by the pid
  // TANDEM_ROUTE_POOL_MAX: the most window memory each copy-engine route's staging pool holds (0: no
  // cap); larger calls run in pieces (tandem/copy_engine_route.h).
  uint64_t route_pool_max_bytes = uint64_t{256} << 20;
  std::optional<long> root_pid;  // the process `tandem run` started
  // The timeline (preload/timeline_session.h).
  TimelineMode timeline = TimelineMode::Off;
  std::string timeline_dir;    // "" for none: the figures go to the summary and the stats file only
  std::string step_range;      // glob over NVTX range names; "" for the whole run as one step
  std::string cuda_injection;  // CUDA_INJECTION64_PATH: a tool that owns CUPTI ("" for none)
  std::string nvtx_injection;  // NVTX_INJECTION64_PATH as found
  std::optional<int> rank;     // from the launcher's variables, to label the timeline
  // TANDEM_STATS_EARLIER: the identity of the stats file an earlier run left, which the root process
  // may replace (device, inode).
  std::optional<std::pair<unsigned long long, unsigned long long>> stats_earlier;
  std::vector<Problem> problems;
  // NCCL's own variables the user set that override the policy's nccl-* settings, as NAME=value
  // (printable): NCCL lets its variables win over a communicator's configuration.
  std::vector<std::string> nccl_variables;
  // NCCL_COMM_BLOCKING when it is 0 or 1 (NCCL ignores other values): whether the program's
  // communicators are non-blocking whatever their configuration says (nccl_settings.h, is_non_blocking).
  std::optional<int> nccl_comm_blocking;

  bool elevates_collectives() const { return policy.comm_priority; }
  bool shapes_compute() const { return policy.shape.kind != ShapeTarget::Kind::None; }
  std::optional<int> sm_target() const { return policy.sm_target; }
  // Whether shape and sm-target act only on compute that may run beside an outstanding collective
  // (the default), rather than on every compute launch (compute-always).
  bool targets_compute() const { return policy.controls_compute() && !policy.compute_always; }
  // "targeted" or "always": how shape and sm-target are applied ("" when the policy sets neither).
  const char* compute_controls() const {
    return !policy.controls_compute() ? "" : policy.compute_always ? "always" : "targeted";
  }
  // Whether the launch path has anything to do beyond counting.
  bool controls_active() const { return elevates_collectives() || shapes_compute(); }
};

using EnvironmentLookup = std::function<std::optional<std::string>(const char* name)>;

// `pid` replaces "%p" in TANDEM_STATS_FILE.
PreloadConfig parse_config(const EnvironmentLookup& lookup, long pid);
// From the process environment (getenv) and getpid().
PreloadConfig config_from_environment();

std::optional<LogLevel> parse_log_level(std::string_view);
const char* to_string(LogLevel);
const char* to_string(TimelineMode);
// Comma-separated glob patterns; surrounding blanks trimmed, empty entries dropped.
std::vector<std::string> split_patterns(std::string_view);
// Every "%p" replaced by `pid`.
std::string expand_pid(std::string_view path, long pid);

struct IgnoredToken {
  std::string token;
  std::string reason;
};
// The part of a policy an interposer can apply to an unmodified program: the tokens whose row in
// tandem/policy_tokens.h says RunTreatment::Interposer. `ignored` receives each other token the
// policy sets, with the reason.
OverlapPolicy interposable_part(const OverlapPolicy&, std::vector<IgnoredToken>* ignored);

}  // namespace tandem::preload
