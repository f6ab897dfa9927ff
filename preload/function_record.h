#pragma once
// What the interposer knows about one launched function: read from the driver the first time the
// function is launched (function_metadata.cpp), then read-only except for the atomics below, which
// the launch path updates without a lock.
#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "cuda_driver.h"
#include "decision_cache.h"
#include "kernel_classification.h"
#include "launch_smem_values.h"

namespace tandem::preload {

// Per-device state is kept for device ordinals below this; launches on others are counted only.
inline constexpr int kMaxDevices = 32;

struct FunctionRecord {
  CUfunction handle = nullptr;     // as passed to the launch: a CUfunction or a CUkernel
  bool is_library_kernel = false;  // a context-independent CUkernel (cudart >= 12 launches these)
  bool metadata_ok = false;        // attributes were read
  std::string name;                // as the driver reports it (mangled)
  std::string display_name;        // demangled when possible
  KernelKind kind = KernelKind::Compute;
  bool selected = true;  // TANDEM_INCLUDE / TANDEM_EXCLUDE allow controls on it
  int regs_per_thread = 0;
  int static_smem = 0;
  int max_threads_per_block = 0;      // 0: unknown
  int initial_max_dynamic_smem = -1;  // -1: unknown (function not loaded yet)
  int required_cluster_size = 1;      // compile-time __cluster_dims__, 1 if none

  std::atomic<uint64_t> launches{0};
  std::atomic<bool> never_shape{false};        // a shaped launch failed once
  std::atomic<bool> never_elevate{false};      // an elevated launch failed once
  std::atomic<bool> limit_is_volatile{false};  // the program lowers its smem limit again and again
  std::atomic<bool> nvtx_marked{false};        // its first shaped or elevated launch is marked (NVTX)
  // Last outcome, for the summary: the ShapingOutcome / ElevationOutcome value and padded smem.
  std::atomic<uint8_t> last_outcome{0};
  std::atomic<uint32_t> last_dynamic_smem{0};
  std::atomic<uint16_t> last_natural_blocks{0};
  std::atomic<uint16_t> last_shaped_blocks{0};
  DecisionCache decision;
  // Under --timeline with a shape policy: the sizes its launches ran with, by their kind (shaped,
  // left alone by the targeted rule, not shapeable: tandem/shaping_check.h's LaunchForm order); the
  // timeline tells the recorded kernels apart by them.
  std::array<LaunchSmemValues, 3> launch_smem;

  // The dynamic shared memory limit we know is set for this function on each device (-1: not
  // raised by us yet), and for CUkernel handles the per-context function the limit is set on.
  std::array<std::atomic<int>, kMaxDevices> raised_limit;
  std::array<std::atomic<CUfunction>, kMaxDevices> device_function;

  FunctionRecord() {
    for (auto& l : raised_limit) l.store(-1, std::memory_order_relaxed);
    for (auto& f : device_function) f.store(nullptr, std::memory_order_relaxed);
  }
};

}  // namespace tandem::preload
