#pragma once
// The names of the TANDEM_* environment variables of `tandem run` and the interposer, and the values
// they accept. Header-only so that the command (app/cmd_run.cpp) and the interposer
// (preload/config.cpp, the one module that reads them) cannot disagree. Every variable is documented
// in docs/ENVIRONMENT.md.
#include <array>
#include <cstdlib>
#include <string>

namespace tandem::preload::env {

inline constexpr const char* kPolicy = "TANDEM_POLICY";
inline constexpr const char* kLogLevel = "TANDEM_LOG_LEVEL";
inline constexpr const char* kInclude = "TANDEM_INCLUDE";
inline constexpr const char* kExclude = "TANDEM_EXCLUDE";
inline constexpr const char* kStatsFile = "TANDEM_STATS_FILE";
inline constexpr const char* kShapeWhen = "TANDEM_SHAPE_WHEN";
// Set by `tandem run` in its child: that process always reports a summary, even with no launch.
inline constexpr const char* kRootPid = "TANDEM_ROOT_PID";
// Set by `tandem run` with --stats when the file exists: "<device>:<inode>" of that earlier run's file,
// which the process `tandem run` started replaces even when it launched nothing (a file with
// another identity was written by a process of this run, and stays).
inline constexpr const char* kStatsEarlier = "TANDEM_STATS_EARLIER";
// Read by `tandem run` only: the interposer library to preload instead of the one found next to it.
inline constexpr const char* kPreloadLib = "TANDEM_PRELOAD_LIB";

// With no TANDEM_POLICY: elevate collectives, which never changes results and never slows compute.
inline constexpr const char* kDefaultPolicy = "priority";

inline constexpr std::array<const char*, 4> kLogLevelNames = {"error", "warn", "info", "debug"};
inline constexpr const char* kDefaultLogLevel = "warn";
inline constexpr std::array<const char*, 2> kShapeWhenNames = {"always", "in-flight"};
inline constexpr const char* kDefaultShapeWhen = "always";

// TANDEM_PRELOAD_LIB, or empty.
inline std::string preload_library_override() {
  const char* value = std::getenv(kPreloadLib);
  return value ? std::string(value) : std::string();
}

}  // namespace tandem::preload::env
