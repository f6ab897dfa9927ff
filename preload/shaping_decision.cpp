#include "shaping_decision.h"

#include <exception>
#include <iterator>

#include "tandem/enum_table.h"

namespace tandem::preload {
namespace {

ShapingDecision unshaped(ShapingOutcome outcome, const ShapingRequest& request, int natural = 0) {
  ShapingDecision d;
  d.outcome = outcome;
  d.dynamic_smem = request.kernel.dynamic_smem;
  d.natural_blocks_per_sm = natural;
  return d;
}

// The first flag-only outcome that applies, if any. Order: the user's choices first (policy,
// patterns), then what we learned (an earlier failure), then what the launch is (cooperative), then
// timing (the targeted form: no collective outstanding beside the launch).
std::optional<ShapingOutcome> flag_outcome(const ShapeTarget& target, const ShapingRequest& request) {
  if (target.kind == ShapeTarget::Kind::None) return ShapingOutcome::NotRequested;
  if (request.excluded) return ShapingOutcome::Excluded;
  if (request.failed_before) return ShapingOutcome::FailedRetry;
  if (request.cooperative) return ShapingOutcome::Cooperative;
  if (!request.collective_in_flight) return ShapingOutcome::NoCollectiveInFlight;
  return std::nullopt;
}

// Why the shared decision (tandem/shaping.h) left the launch as it is, as the summary counts it.
ShapingOutcome outcome_of(PaddingOutcome outcome) {
  switch (outcome) {
    case PaddingOutcome::NotRequested:
      return ShapingOutcome::NotRequested;
    case PaddingOutcome::AtTarget:
    case PaddingOutcome::BelowTarget:
      return ShapingOutcome::AlreadyAtTarget;
    case PaddingOutcome::AlreadyHasRoom:
      return ShapingOutcome::AlreadyHasRoom;
    case PaddingOutcome::NoCollectiveFootprint:
      return ShapingOutcome::NoNcclFootprint;
    case PaddingOutcome::Padded:  // not reached: a padded launch goes on to the checks below
    case PaddingOutcome::Unreachable:
      break;
  }
  return ShapingOutcome::Unreachable;
}

ShapingDecision decide_with_model(const DeviceLimits& limits, const ShapeTarget& target, const ShapingRequest& request,
                                  const std::optional<KernelFootprint>& last_collective) {
  const KernelFootprint& kernel = request.kernel;
  const int natural = residency(limits, kernel).blocks_per_sm;
  // 0: the launch is invalid as it stands (too many threads, too much smem...); the driver will say
  // so, unchanged.
  if (natural == 0) return unshaped(ShapingOutcome::Unreachable, request, natural);
  if (natural == 1) return unshaped(ShapingOutcome::OneBlockPerSm, request, natural);

  const ShapePadding padding = shape_padding(limits, kernel, target, last_collective);
  if (padding.outcome != PaddingOutcome::Padded) return unshaped(outcome_of(padding.outcome), request, natural);

  KernelFootprint padded = kernel;
  padded.dynamic_smem = padding.dynamic_smem;
  const int shaped = residency(limits, padded).blocks_per_sm;
  if (shaped == 0) return unshaped(ShapingOutcome::Unreachable, request, natural);
  if (shaped >= natural) return unshaped(ShapingOutcome::AlreadyAtTarget, request, natural);

  // Clusters are placed GPC by GPC, which the model does not see. Padding is only applied when a
  // whole cluster still fits on one SM at the padded residency: then every placement that worked
  // before still works. Otherwise the cluster launch is left alone.
  if (kernel.cluster_size > 1 && (kernel.cluster_size > limits.max_cluster_size || kernel.cluster_size > shaped))
    return unshaped(ShapingOutcome::Cluster, request, natural);

  ShapingDecision d;
  d.outcome = ShapingOutcome::Shaped;
  d.dynamic_smem = padding.dynamic_smem;
  d.natural_blocks_per_sm = natural;
  d.shaped_blocks_per_sm = shaped;
  return d;
}

}  // namespace

const char* to_string(ShapingOutcome outcome) {
  static constexpr const char* kNames[] = {"not-requested",     "shaped",           "excluded",
                                           "failed-retry",      "cooperative",      "no-collective-in-flight",
                                           "no-nccl-footprint", "one-block-per-sm", "already-at-target",
                                           "already-has-room",  "unreachable",      "cluster",
                                           "model-error",       "no-metadata",      "no-device",
                                           "cap-raise-failed"};  // in the enum's order
  static_assert(std::size(kNames) == kShapingOutcomeCount, "a name for every outcome");
  return entry_or(kNames, outcome, "unknown");
}

bool decided_before_model(const ShapeTarget& target, const ShapingRequest& request) {
  return flag_outcome(target, request).has_value();
}

ShapingDecision decide_shaping(const DeviceLimits& limits, const ShapeTarget& target, const ShapingRequest& request,
                               const std::optional<KernelFootprint>& last_collective) {
  if (const auto outcome = flag_outcome(target, request)) return unshaped(*outcome, request);
  try {
    return decide_with_model(limits, target, request, last_collective);
  } catch (const std::exception&) {
    // The model throws on incomplete device limits; a launch must never see that.
    return unshaped(ShapingOutcome::ModelError, request);
  }
}

}  // namespace tandem::preload
