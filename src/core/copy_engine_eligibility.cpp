#include "tandem/copy_engine_eligibility.h"

#include <iterator>

#include "tandem/enum_table.h"

namespace tandem {

const char* to_string(Reduction r) {
  // In the enum's order.
  static constexpr const char* kNames[] = {"sum", "average", "pre-multiplied sum", "pre-divided sum", "unsupported"};
  static_assert(covers(kNames, Reduction::Unsupported), "one name per Reduction");
  return table_entry(kNames, r);
}

Reduction reduction_of(int nccl_op, bool known_pre_mul_sum) {
  constexpr int kSum = 0, kAvg = 4, kNumOps = 5;
  if (nccl_op == kSum) return Reduction::Sum;
  if (nccl_op == kAvg) return Reduction::Average;
  if (nccl_op >= kNumOps && known_pre_mul_sum) return Reduction::PreMulSum;
  return Reduction::Unsupported;
}

namespace {

// Each outcome's token and its explanation, in the enum's order.
struct OutcomeText {
  const char* token;
  const char* explanation;
};
constexpr OutcomeText kOutcomeTexts[] = {
    {"copy-engine", "taken by tandem's copy-engine collective"},
    {"not-requested", "the policy has no copy-engine"},
    {"unknown-communicator", "the communicator's size is not known"},
    {"op-not-supported", "the route computes sums, averages and pre-multiplied sums only"},
    {"no-sum-kernel", "the route adds bf16, fp16 and fp32 only"},
    {"unknown-type", "the data type's size is not known"},
    {"empty", "an empty collective has nothing to move"},
    {"single-rank",
     "a communicator of one rank exchanges nothing: NCCL's local copy, with no staging and no window memory"},
    {"in-place-all-to-all", "an in-place all-to-all is left to NCCL's own rules"},
    {"root-out-of-range", "a broadcast from a rank outside the communicator is left to NCCL, which reports it"},
    {"capture-not-ready",
     "captured into a CUDA graph before the route was set up (run the step once before capturing it)"},
    {"several-devices-group",
     "one thread's NCCL group drives ranks on several devices, which the route would run one by one"},
    {"non-blocking-group",
     "the group's NCCL part is on a non-blocking communicator, issued after ncclGroupEnd returns: the route would "
     "have to wait for it"},
    {"communicator-gone",
     "the program destroyed or aborted the communicator before its group ended: nothing runs on it, as in NCCL"},
    {"route-unavailable", "the copy-engine route is not available in this process"},
    {"route-failed", "the copy-engine route failed earlier on this communicator"},
};
static_assert(std::size(kOutcomeTexts) == kRouteOutcomeCount, "one text per RouteOutcome");

OutcomeText text_of(RouteOutcome outcome) {
  return entry_or(kOutcomeTexts, outcome, OutcomeText{"unknown", "unknown"});
}

}  // namespace

const char* to_string(RouteOutcome outcome) { return text_of(outcome).token; }

const char* explain(RouteOutcome outcome) { return text_of(outcome).explanation; }

RouteOutcome decide_route(const RouteRequest& r, const RouteFacts& facts) {
  if (!facts.requested) return RouteOutcome::NotRequested;
  if (r.nranks <= 0) return RouteOutcome::UnknownCommunicator;
  if (reduces(r.kind)) {
    if (r.reduction == Reduction::Unsupported) return RouteOutcome::OpNotSupported;
    if (!r.has_sum_kernel) return r.element_bytes ? RouteOutcome::NoSumKernel : RouteOutcome::UnknownType;
  }
  // All-gather and all-to-all only move bytes: any type of known size.
  if (r.element_bytes == 0) return RouteOutcome::UnknownType;
  if (r.count == 0) return RouteOutcome::Empty;
  if (r.nranks == 1) return RouteOutcome::SingleRank;
  const CollectiveRecord& kind = record_of(r.kind);
  if (r.in_place && !kind.in_place_routed) return RouteOutcome::InPlaceAllToAll;
  if (kind.has_root && (r.root < 0 || r.root >= r.nranks)) return RouteOutcome::RootOutOfRange;
  if (facts.failed) return RouteOutcome::RouteFailed;
  if (facts.unavailable) return RouteOutcome::RouteUnavailable;
  return RouteOutcome::CopyEngine;
}

}  // namespace tandem
