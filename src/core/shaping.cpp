#include "tandem/shaping.h"

namespace tandem {

namespace {

ShapePadding unpadded(PaddingOutcome outcome, const KernelFootprint& kernel) { return {outcome, kernel.dynamic_smem}; }

}  // namespace

ShapePadding shape_padding(const DeviceLimits& limits, const KernelFootprint& kernel, const ShapeTarget& target,
                           const std::optional<KernelFootprint>& collective) {
  switch (target.kind) {
    case ShapeTarget::Kind::BlocksPerSm: {
      const int natural = residency(limits, kernel).blocks_per_sm;
      if (natural == target.blocks_per_sm) return unpadded(PaddingOutcome::AtTarget, kernel);
      if (natural < target.blocks_per_sm) return unpadded(PaddingOutcome::BelowTarget, kernel);
      const auto padded = dynamic_smem_for_target(limits, kernel, target.blocks_per_sm);
      if (!padded) return unpadded(PaddingOutcome::Unreachable, kernel);
      return {PaddingOutcome::Padded, *padded};
    }
    case ShapeTarget::Kind::Bytes: {
      // Added to what the kernel asks for itself: the padding is on top of the kernel's own use.
      const int64_t padded = kernel.dynamic_smem + target.bytes;
      if (kernel.static_smem + padded > limits.max_smem_per_block) return unpadded(PaddingOutcome::Unreachable, kernel);
      return {PaddingOutcome::Padded, padded};
    }
    case ShapeTarget::Kind::Auto: {
      if (!collective) return unpadded(PaddingOutcome::NoCollectiveFootprint, kernel);
      const auto plan = least_shaping_with_room(limits, kernel, *collective);
      if (!plan) return unpadded(PaddingOutcome::Unreachable, kernel);
      if (plan->dynamic_smem == kernel.dynamic_smem) return unpadded(PaddingOutcome::AlreadyHasRoom, kernel);
      return {PaddingOutcome::Padded, plan->dynamic_smem};
    }
    case ShapeTarget::Kind::None:
      break;
  }
  return unpadded(PaddingOutcome::NotRequested, kernel);
}

}  // namespace tandem
