#pragma once
// Whether and how to shape one compute launch: the decision as a pure function of the device's
// limits, the kernel's footprint at this launch, the policy's target and the last NCCL footprint
// seen. The padding itself is tandem::shape_padding (tandem/shaping.h), shared with ShapedKernel;
// this adds the interposer's own rules (flags, one block per SM, clusters). No CUDA call; the
// interposer caches its result per kernel (decision_cache.h) and applies it.
//
// Shaping only ever raises the launch's dynamic shared memory. Launches that cannot take that are
// left alone, each with the reason counted in the summary.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "tandem/occupancy.h"
#include "tandem/policy.h"
#include "tandem/shaping.h"

namespace tandem::preload {

// Every outcome of a compute launch. The names (to_string) are the keys of the summary's "skipped"
// table. Keep kCount last.
enum class ShapingOutcome : uint8_t {
  NotRequested,          // the policy has no shape target
  Shaped,                // padded: the launch gets `dynamic_smem`
  Excluded,              // TANDEM_INCLUDE / TANDEM_EXCLUDE leave this kernel alone
  FailedRetry,           // an earlier shaped launch of this kernel failed; it is never shaped again
  Cooperative,           // grid-wide sync needs every block resident: residency must not drop
  NoCollectiveInFlight,  // the targeted form (no compute-always) and no collective outstanding beside it
  NoNcclFootprint,       // shape:auto before any NCCL launch was seen
  OneBlockPerSm,         // already one block per SM: padding cannot free anything
  AlreadyAtTarget,       // resident blocks already at or below the target (or padding changes nothing)
  AlreadyHasRoom,        // shape:auto: the collective's CTA already fits beside the kernel
  Unreachable,           // no padding reaches the target within the per-block shared-memory limit
  Cluster,               // cluster launch that might no longer be schedulable once padded
  ModelError,            // the residency model rejected the inputs (incomplete device limits)
  NoMetadata,            // the kernel's attributes could not be read from the driver
  NoDevice,              // no current context / device out of range
  CapRaiseFailed,        // the kernel's dynamic shared memory limit could not be raised
  kCount
};
const char* to_string(ShapingOutcome);
inline constexpr int kShapingOutcomeCount = static_cast<int>(ShapingOutcome::kCount);

struct ShapingRequest {
  KernelFootprint kernel;  // threads, registers, static smem, the launch's dynamic smem, cluster size
  bool cooperative = false;
  bool excluded = false;
  bool failed_before = false;
  bool collective_in_flight = true;  // false only under the targeted form, with no collective outstanding beside it
};

struct ShapingDecision {
  ShapingOutcome outcome = ShapingOutcome::NotRequested;
  int64_t dynamic_smem = 0;       // to request: padded when Shaped, else the launch's own
  int natural_blocks_per_sm = 0;  // 0 when not computed
  int shaped_blocks_per_sm = 0;   // 0 when not Shaped
};

// `last_collective` is the footprint of the last NCCL launch (needed by shape:auto only).
ShapingDecision decide_shaping(const DeviceLimits& limits, const ShapeTarget& target, const ShapingRequest& request,
                               const std::optional<KernelFootprint>& last_collective);

// The outcomes that depend only on the request's flags, not on the model: the interposer checks
// these before consulting its per-kernel cache of model decisions.
bool decided_before_model(const ShapeTarget& target, const ShapingRequest& request);

}  // namespace tandem::preload
