#include "launch_controls.h"

#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "collective_footprint.h"
#include "function_metadata.h"
#include "log.h"
#include "shaping_decision.h"
#include "tandem/shaping_check.h"
#include "timeline_session.h"

namespace tandem::preload {
namespace {

template <class Outcome>
void remember_outcome(FunctionRecord& record, Outcome outcome) {
  const auto value = static_cast<uint8_t>(outcome);
  // Read first: a store on every launch would bounce the cache line between launching threads.
  if (record.last_outcome.load(std::memory_order_relaxed) != value)
    record.last_outcome.store(value, std::memory_order_relaxed);
}

// Whether the launch's stream is capturing into a graph (counted). Captured launches need nothing
// special: the node keeps the padded size and the priority. Only the targeted form treats them apart.
// Asked only for launches a control applies to, so a launch the policy leaves alone costs no query.
bool capturing(const DriverApi& api, const Launch& l) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (api.cuStreamIsCapturing(l.stream_for_driver_calls(), &status) != CUDA_SUCCESS) return false;
  if (status == CU_STREAM_CAPTURE_STATUS_NONE) return false;
  Counters::bump(counters().captured);
  return true;
}

// Nsight Systems: a mark the first time a kernel's launch is shaped or elevated, none after; callers
// test nvtx_marked first, one relaxed load per launch as for the other flags here. NVTX3 is
// header-only, nothing is linked; without a profiler the mark is a function-pointer check. The first
// NVTX call looks for the profiler's library in the environment and may load it: errno is kept.
void mark_first_decision(FunctionRecord& record, const std::string& what) {
  if (record.nvtx_marked.exchange(true, std::memory_order_relaxed)) return;  // another thread marked it
  const int saved_errno = errno;
  nvtxMarkA(("tandem: " + what).c_str());
  errno = saved_errno;
}

KernelFootprint footprint_of(const FunctionRecord& record, const Launch& l) {
  KernelFootprint f;
  f.threads_per_block = l.threads_per_block();
  f.regs_per_thread = record.regs_per_thread;
  f.static_smem = record.static_smem;
  f.dynamic_smem = l.shared_mem_bytes;
  f.cluster_size = std::max(1, l.cluster_size);
  return f;
}

// ---- decision cache keys and values -------------------------------------------------------------

uint64_t launch_key(const ShapingRequest& request, int device) {
  const auto threads = static_cast<uint64_t>(std::clamp(request.kernel.threads_per_block, 0, 0xFFFF));
  const auto cluster = static_cast<uint64_t>(std::clamp(request.kernel.cluster_size, 0, 0xFF));
  const auto smem = static_cast<uint64_t>(request.kernel.dynamic_smem) & 0xFFFFFFFFull;
  return threads << 48 | cluster << 40 | static_cast<uint64_t>(device & 0xFF) << 32 | smem;
}

uint64_t pack_decision(const ShapingDecision& d) {
  return static_cast<uint64_t>(std::clamp(d.shaped_blocks_per_sm, 0, 0xFF)) << 48 |
         static_cast<uint64_t>(std::clamp(d.natural_blocks_per_sm, 0, 0xFF)) << 40 |
         static_cast<uint64_t>(d.outcome) << 32 | (static_cast<uint64_t>(d.dynamic_smem) & 0xFFFFFFFFull);
}

ShapingDecision unpack_decision(uint64_t v) {
  ShapingDecision d;
  d.dynamic_smem = static_cast<int64_t>(v & 0xFFFFFFFFull);
  d.outcome = static_cast<ShapingOutcome>((v >> 32) & 0xFF);
  d.natural_blocks_per_sm = static_cast<int>((v >> 40) & 0xFF);
  d.shaped_blocks_per_sm = static_cast<int>((v >> 48) & 0xFF);
  return d;
}

// The model's decision for this launch, from the kernel's one-entry cache when the block size,
// requested smem, cluster size, device and (for shape:auto) NCCL footprint are those of last time.
ShapingDecision decide(Runtime& rt, FunctionRecord& record, const DeviceState& device, const ShapingRequest& request) {
  const ShapeTarget& target = rt.config.policy.shape;
  if (decided_before_model(target, request)) return decide_shaping(device.limits, target, request, std::nullopt);
  const uint64_t collective =
      target.kind == ShapeTarget::Kind::Auto ? rt.last_collective.load(std::memory_order_relaxed) : 0;
  const DecisionKey key{launch_key(request, device.ordinal), collective};
  if (const auto cached = record.decision.find(key)) return unpack_decision(*cached);
  const ShapingDecision d = decide_shaping(device.limits, target, request, unpack_footprint(collective));
  record.decision.store(key, pack_decision(d));
  if (log_enabled(LogLevel::Debug)) {
    if (d.outcome == ShapingOutcome::Shaped)
      log(LogLevel::Debug, "%s: %d threads, %lld B dynamic smem: shaped (%d -> %d blocks/SM, %lld B)",
          record.display_name.c_str(), request.kernel.threads_per_block,
          static_cast<long long>(request.kernel.dynamic_smem), d.natural_blocks_per_sm, d.shaped_blocks_per_sm,
          static_cast<long long>(d.dynamic_smem));
    else
      log(LogLevel::Debug, "%s: %d threads, %lld B dynamic smem: not shaped: %s (%d blocks/SM)",
          record.display_name.c_str(), request.kernel.threads_per_block,
          static_cast<long long>(request.kernel.dynamic_smem), to_string(d.outcome), d.natural_blocks_per_sm);
  }
  return d;
}

// ---- the kernel's dynamic shared memory limit ----------------------------------------------------

int read_limit(const DriverApi& api, CUfunction f) {
  int value = -1;
  if (api.cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f) != CUDA_SUCCESS) return -1;
  return value;
}

bool set_limit(const DriverApi& api, FunctionRecord& record, CUfunction f, int device, int needed) {
  const RelaxedCaptureMode relaxed(api);  // the launch that needs it may be into a capturing stream
  if (api.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, needed) != CUDA_SUCCESS) return false;
  // A CUkernel also gets the limit at kernel level for this device (what cudaFuncSetAttribute may
  // set); the per-context function's value, set above, takes precedence over it either way.
  if (record.is_library_kernel && api.cuKernelSetAttribute)
    api.cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, needed,
                             reinterpret_cast<CUkernel>(record.handle), static_cast<CUdevice>(device));
  record.raised_limit[device].store(needed, std::memory_order_release);
  return true;
}

// Makes sure `f` accepts `needed` bytes of dynamic shared memory. Launches above 48 KiB (or above
// what the program set) fail unless the function's limit allows them. The limit we set is cached per
// device; only a kernel whose program keeps lowering it again is re-read before each launch.
bool ensure_limit(const DriverApi& api, FunctionRecord& record, CUfunction f, int device, int needed) {
  if (!record.limit_is_volatile.load(std::memory_order_relaxed) &&
      record.raised_limit[device].load(std::memory_order_acquire) >= needed)
    return true;
  const int current = read_limit(api, f);
  if (current >= needed) {
    if (!record.limit_is_volatile.load(std::memory_order_relaxed))
      record.raised_limit[device].store(current, std::memory_order_release);
    return true;
  }
  return set_limit(api, record, f, device, needed);
}

// After a failed shaped launch: whether the limit had been lowered below `needed` behind our back
// and is now raised again (then the shaped launch is worth one more try).
bool limit_was_lowered(const DriverApi& api, FunctionRecord& record, CUfunction f, int device, int needed) {
  const int current = read_limit(api, f);
  return current >= 0 && current < needed && set_limit(api, record, f, device, needed);
}

// Under --timeline: the size this launch ran with, as a launch of its kind (tandem/shaping_check.h).
void note_launch_size(FunctionRecord& record, LaunchForm form, uint32_t bytes) {
  if (timeline_recording()) record.launch_smem[static_cast<size_t>(form)].note(bytes);
}

// `left_alone`: the targeted rule left a launch the policy would shape (the caller knows; every other
// launch skipped here is one the policy cannot shape).
CUresult skip_shaping(FunctionRecord& record, const Launch& l, ShapingOutcome outcome, bool left_alone = false) {
  Counters::bump(counters().shaping[static_cast<int>(outcome)]);
  remember_outcome(record, outcome);
  note_launch_size(record, left_alone ? LaunchForm::LeftAlone : LaunchForm::Unshapeable, l.shared_mem_bytes);
  return issue(l, l.shared_mem_bytes);
}

void note_shaped(FunctionRecord& record, const ShapingDecision& d) {
  Counters::bump(counters().shaping[static_cast<int>(ShapingOutcome::Shaped)]);
  remember_outcome(record, ShapingOutcome::Shaped);
  note_launch_size(record, LaunchForm::Shaped, static_cast<uint32_t>(d.dynamic_smem));
  if (!record.nvtx_marked.load(std::memory_order_relaxed))
    mark_first_decision(record, "shaped " + record.display_name + " (" + std::to_string(d.natural_blocks_per_sm) +
                                    " -> " + std::to_string(d.shaped_blocks_per_sm) + " blocks/SM, " +
                                    std::to_string(d.dynamic_smem) + " B dynamic smem)");
  if (record.last_dynamic_smem.load(std::memory_order_relaxed) != static_cast<uint32_t>(d.dynamic_smem)) {
    record.last_dynamic_smem.store(static_cast<uint32_t>(d.dynamic_smem), std::memory_order_relaxed);
    record.last_natural_blocks.store(static_cast<uint16_t>(d.natural_blocks_per_sm), std::memory_order_relaxed);
    record.last_shaped_blocks.store(static_cast<uint16_t>(d.shaped_blocks_per_sm), std::memory_order_relaxed);
  }
}

}  // namespace

CUresult launch_collective(Runtime& rt, const DriverApi& api, FunctionRecord& record, const Launch& l) {
  Counters& count = counters();
  // Every NCCL launch publishes its footprint for shape:auto (one atomic store).
  if (record.metadata_ok) rt.last_collective.store(pack_footprint(footprint_of(record, l)), std::memory_order_relaxed);

  const PreloadConfig& config = rt.config;
  // The targeted form of shape and sm-target follows the streams NCCL kernels run on (outstanding_collectives.h).
  const bool track_in_flight = config.targets_compute();
  DeviceState* device = nullptr;
  bool captured = false;
  if (config.elevates_collectives() || track_in_flight) {
    if (const auto ordinal = current_device(api)) device = rt.devices.get(api, *ordinal);
    captured = capturing(api, l);
  }

  ElevationOutcome outcome = ElevationOutcome::NotRequested;
  CUresult result = CUDA_SUCCESS;
  if (!config.elevates_collectives()) {
    result = issue(l, l.shared_mem_bytes);
  } else if (!record.selected) {
    outcome = ElevationOutcome::Excluded;
    result = issue(l, l.shared_mem_bytes);
  } else if (record.never_elevate.load(std::memory_order_relaxed)) {
    outcome = ElevationOutcome::FailedRetry;
    result = issue(l, l.shared_mem_bytes);
  } else if (!device || !device->priority_ok) {
    outcome = ElevationOutcome::NoDevice;
    result = issue(l, l.shared_mem_bytes);
  } else if (const auto elevated = issue_with_priority(l, l.shared_mem_bytes, device->greatest_priority); !elevated) {
    outcome = ElevationOutcome::TooManyAttributes;
    result = issue(l, l.shared_mem_bytes);
  } else if (*elevated == CUDA_SUCCESS) {
    outcome = ElevationOutcome::Elevated;
    if (!record.nvtx_marked.load(std::memory_order_relaxed))
      mark_first_decision(record, "elevated " + record.display_name + " to stream priority " +
                                      std::to_string(device->greatest_priority));
  } else {
    // The driver refused the re-issued launch. Issue it exactly as the program did and return that
    // result; never try this kernel again.
    record.never_elevate.store(true, std::memory_order_relaxed);
    Counters::bump(count.elevated_launch_failures);
    log(LogLevel::Warn, "elevated launch of %s failed (CUresult %d); issued unchanged, not elevated again",
        record.display_name.c_str(), static_cast<int>(*elevated));
    outcome = ElevationOutcome::FailedRetry;
    result = issue(l, l.shared_mem_bytes);
  }
  Counters::bump(count.elevation[static_cast<int>(outcome)]);
  remember_outcome(record, outcome);

  // The targeted form: mark the end of this collective on its stream. Not during capture: the event
  // would describe the capture, not a running collective.
  if (result == CUDA_SUCCESS && track_in_flight && device && !captured)
    rt.outstanding.note_collective_launch(api, device->ordinal, l.stream_for_driver_calls());
  return result;
}

CUresult launch_compute(Runtime& rt, const DriverApi& api, FunctionRecord& record, const Launch& l) {
  const PreloadConfig& config = rt.config;
  if (!config.shapes_compute()) return issue(l, l.shared_mem_bytes);
  ShapingRequest request;
  request.kernel = footprint_of(record, l);
  request.cooperative = l.cooperative;
  request.excluded = !record.selected;
  request.failed_before = record.never_shape.load(std::memory_order_relaxed);
  // Excluded, failed before, cooperative: decided without asking the driver anything.
  if (decided_before_model(config.policy.shape, request))
    return skip_shaping(record, l, decide_shaping(DeviceLimits{}, config.policy.shape, request, std::nullopt).outcome);
  if (!record.metadata_ok) return skip_shaping(record, l, ShapingOutcome::NoMetadata);
  const bool captured = capturing(api, l);
  const auto ordinal = current_device(api);
  DeviceState* device = ordinal ? rt.devices.get(api, *ordinal) : nullptr;
  if (!device || !device->limits_ok) return skip_shaping(record, l, ShapingOutcome::NoDevice);
  // The targeted form shapes only what may run beside an NCCL kernel. A captured launch is replayed
  // later, when a collective may well be running: it is shaped.
  if (config.targets_compute())
    request.collective_in_flight =
        captured || rt.outstanding.beside_collective(api, device->ordinal, l.stream_for_driver_calls());

  const ShapingDecision decision = decide(rt, record, *device, request);
  if (decision.outcome == ShapingOutcome::NoCollectiveInFlight) {
    // The timeline's check tells a launch the rule left alone from one the policy could not shape:
    // what the model would say beside a collective (cached like any decision). Only while recording.
    bool would_shape = false;
    if (timeline_recording()) {
      ShapingRequest beside = request;
      beside.collective_in_flight = true;
      would_shape = decide(rt, record, *device, beside).outcome == ShapingOutcome::Shaped;
    }
    return skip_shaping(record, l, decision.outcome, would_shape);
  }
  if (decision.outcome != ShapingOutcome::Shaped) return skip_shaping(record, l, decision.outcome);

  const int needed = static_cast<int>(decision.dynamic_smem);
  const CUfunction f = function_in_current_context(record, api, *ordinal);
  if (!f || !ensure_limit(api, record, f, *ordinal, needed))
    return skip_shaping(record, l, ShapingOutcome::CapRaiseFailed);

  CUresult result = issue(l, static_cast<unsigned>(needed));
  if (result == CUDA_SUCCESS) {
    note_shaped(record, decision);
    return result;
  }
  if (limit_was_lowered(api, record, f, *ordinal, needed)) {
    // The program set its own (smaller) limit again after we raised it, e.g. a cudaFuncSetAttribute
    // before every launch. From now on the limit is re-read before each shaped launch of this kernel.
    record.limit_is_volatile.store(true, std::memory_order_relaxed);
    Counters::bump(counters().cap_refreshes);
    result = issue(l, static_cast<unsigned>(needed));
    if (result == CUDA_SUCCESS) {
      note_shaped(record, decision);
      return result;
    }
  }
  // Issue it exactly as the program did and return that result; never shape this kernel again.
  record.never_shape.store(true, std::memory_order_relaxed);
  Counters::bump(counters().shaped_launch_failures);
  log(LogLevel::Warn,
      "shaped launch of %s with %d B dynamic smem failed (CUresult %d); issued unshaped, not shaped again",
      record.display_name.c_str(), needed, static_cast<int>(result));
  return skip_shaping(record, l, ShapingOutcome::FailedRetry);
}

}  // namespace tandem::preload
