#pragma once
// The padding a shape target asks of one kernel: the one decision behind ShapedKernel (the library
// and `tandem bench`) and the interposer's shaping (preload/shaping_decision.h). Pure C++ on the
// occupancy model (occupancy.h), so it is tested on CPU and the two can never disagree.
//
// Each caller adds its own rules around it: ShapedKernel throws when a target cannot be met; the
// interposer leaves such launches alone and also skips one-block-per-SM, cluster and cooperative
// launches.
#include <cstdint>
#include <optional>

#include "tandem/occupancy.h"
#include "tandem/policy.h"

namespace tandem {

enum class PaddingOutcome {
  NotRequested,           // the target is Kind::None
  Padded,                 // the launch should ask for `dynamic_smem`
  AtTarget,               // shape:N and the kernel already reaches exactly N blocks per SM
  BelowTarget,            // shape:N and the kernel reaches fewer than N: padding only removes blocks
  AlreadyHasRoom,         // shape:auto and one collective CTA already fits beside the kernel's blocks
  NoCollectiveFootprint,  // shape:auto without the collective's footprint
  Unreachable,            // no padding within the per-block shared-memory maximum meets the target
};

struct ShapePadding {
  PaddingOutcome outcome = PaddingOutcome::NotRequested;
  int64_t dynamic_smem = 0;  // dynamic shared memory to launch with: padded when Padded, else the kernel's own
};

// shape:N pads to the least allocation giving exactly N blocks per SM (dynamic_smem_for_target);
// shape:<bytes> adds that much to the kernel's own dynamic shared memory; shape:auto takes the
// largest residency that leaves room for one `collective` CTA (least_shaping_with_room).
// Throws tandem::Error when the device limits are incomplete (from the occupancy model).
ShapePadding shape_padding(const DeviceLimits&, const KernelFootprint& kernel, const ShapeTarget&,
                           const std::optional<KernelFootprint>& collective);

}  // namespace tandem
