#pragma once
// The interposer's process-wide state, created by the first hook call that needs it (never at load
// time) and never destroyed: hooks can run during exit, after static destructors.
#include <atomic>
#include <cstdint>

#include "config.h"
#include "device_table.h"
#include "function_table.h"
#include "nccl_registry.h"
#include "outstanding_collectives.h"
#include "stats.h"

namespace tandem::preload {

struct Runtime {
  PreloadConfig config;
  FunctionTable functions;
  DeviceTable devices;
  OutstandingCollectives outstanding;  // for the targeted form of shape and sm-target
  CommunicatorRegistry communicators;  // NCCL communicators created through the hooks (nccl_hooks.cpp)
  // Footprint of the last NCCL launch (collective_footprint.h); 0 until one is seen.
  std::atomic<uint64_t> last_collective{0};
  // The process these counters and records are of (set again in a fork's child): a vfork child,
  // which shares its parent's memory, is not it (exit_hooks.cpp).
  std::atomic<long> pid{0};
};

// Counters live outside Runtime: constant-initialised, so counting needs no initialisation.
Counters& counters();

// The state, initialised on first call (configuration from the environment, log level, fork
// handlers, one "active" line at info level).
Runtime& runtime();
// The state if initialised, else nullptr (for the exit report of a process that never launched).
Runtime* runtime_if_initialized();

}  // namespace tandem::preload
