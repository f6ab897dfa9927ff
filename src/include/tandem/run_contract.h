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
// The copy-engine route's staging pool cap per communicator (a byte count: 256MiB, 1G; 0: no cap).
inline constexpr const char* kRoutePoolMax = "TANDEM_ROUTE_POOL_MAX";
// The timeline (`tandem run --timeline`, `--trace`, `--step-range`; preload/timeline_session.h): off, on
// (figures), trace (figures and the trace's events); the folder each recording process writes its
// figures (and trace events) to; the glob NVTX range names of steps match.
inline constexpr const char* kTimeline = "TANDEM_TIMELINE";
inline constexpr const char* kTimelineDir = "TANDEM_TIMELINE_DIR";
inline constexpr const char* kStepRange = "TANDEM_STEP_RANGE";
// Other software's variables the interposer reads for the timeline: a tool injected into the CUDA
// driver (Nsight Systems, Nsight Compute) or into NVTX owns CUPTI, and the timeline steps aside. NVTX
// reads NVTX_INJECTION64_PATH at the program's first NVTX call; `tandem run --timeline` points it at
// the interposer, which hands NVTX to CUPTI (the ranges that give the steps).
inline constexpr const char* kCudaInjection = "CUDA_INJECTION64_PATH";
inline constexpr const char* kNvtxInjection = "NVTX_INJECTION64_PATH";
// The launchers' rank variables, read by the interposer only to label its timeline (the benchmark
// reads them in bench/ranks/launch_env.cpp), in this order.
inline constexpr std::array<const char*, 4> kRankVariables = {"OMPI_COMM_WORLD_RANK", "RANK", "PMI_RANK",
                                                              "SLURM_PROCID"};
inline constexpr std::array<const char*, 3> kTimelineModeNames = {"off", "on", "trace"};

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

// TANDEM_PRELOAD_LIB, or empty.
inline std::string preload_library_override() {
  const char* value = std::getenv(kPreloadLib);
  return value ? std::string(value) : std::string();
}

}  // namespace tandem::preload::env
