#pragma once
// The contract between `tandem run` (app/) and the interposer (preload/), one header both include:
// the names of the TANDEM_* environment variables and the values they accept (the interposer's
// preload/config.cpp is the one module that reads them; docs/ENVIRONMENT.md documents each), and the
// symbols the interposer hooks and so must export (tandem/hook_list.h), which `tandem run` checks a
// library for before preloading it. Header-only, no CUDA header.
#include <array>
#include <cstdlib>
#include <string>

#include "tandem/hook_list.h"

namespace tandem::preload {

// Every symbol the interposer hooks, driver entry points first (the order of Hook, hooked_symbols.h).
#define TANDEM_HOOK_NAME(name, ret, params, args) #name,
inline constexpr const char* kHookNames[] = {TANDEM_DRIVER_HOOKS(TANDEM_HOOK_NAME)
                                                 TANDEM_LIBRARY_HOOKS(TANDEM_HOOK_NAME)};
#undef TANDEM_HOOK_NAME

}  // namespace tandem::preload

namespace tandem::preload::env {

inline constexpr const char* kPolicy = "TANDEM_POLICY";
inline constexpr const char* kLogLevel = "TANDEM_LOG_LEVEL";
inline constexpr const char* kInclude = "TANDEM_INCLUDE";
inline constexpr const char* kExclude = "TANDEM_EXCLUDE";
inline constexpr const char* kStatsFile = "TANDEM_STATS_FILE";
inline constexpr const char* kShapeWhen = "TANDEM_SHAPE_WHEN";
// Set by `tandem run` in its child: that process always reports a summary, even with no launch.
inline constexpr const char* kRootPid = "TANDEM_ROOT_PID";
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
