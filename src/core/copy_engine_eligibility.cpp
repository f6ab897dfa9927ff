#include "tandem/copy_engine_eligibility.h"

namespace tandem {

const char* to_string(Reduction r) {
  switch (r) {
    case Reduction::Sum:
      return "sum";
    case Reduction::Average:
      return "average";
    case Reduction::PreMulSum:
      return "pre-multiplied sum";
    case Reduction::PreDivSum:
      return "pre-divided sum";
    case Reduction::Unsupported:
      break;
  }
  return "unsupported";
}

const char* to_string(RouteOutcome outcome) {
  switch (outcome) {
    case RouteOutcome::CopyEngine:
      return "copy-engine";
    case RouteOutcome::NotRequested:
      return "not-requested";
    case RouteOutcome::UnknownCommunicator:
      return "unknown-communicator";
    case RouteOutcome::OpNotSupported:
      return "op-not-supported";
    case RouteOutcome::NoSumKernel:
      return "no-sum-kernel";
    case RouteOutcome::UnknownType:
      return "unknown-type";
    case RouteOutcome::Empty:
      return "empty";
    case RouteOutcome::InPlaceAllToAll:
      return "in-place-all-to-all";
    case RouteOutcome::RootOutOfRange:
      return "root-out-of-range";
    case RouteOutcome::CaptureNotReady:
      return "capture-not-ready";
    case RouteOutcome::SeveralDevicesGroup:
      return "several-devices-group";
    case RouteOutcome::RouteUnavailable:
      return "route-unavailable";
    case RouteOutcome::RouteFailed:
      return "route-failed";
    case RouteOutcome::kCount:
      break;
  }
  return "unknown";
}

const char* explain(RouteOutcome outcome) {
  switch (outcome) {
    case RouteOutcome::CopyEngine:
      return "taken by tandem's copy-engine collective";
    case RouteOutcome::NotRequested:
      return "the policy has no copy-engine";
    case RouteOutcome::UnknownCommunicator:
      return "the communicator's size is not known";
    case RouteOutcome::OpNotSupported:
      return "the route computes sums, averages and pre-multiplied sums only";
    case RouteOutcome::NoSumKernel:
      return "the route adds bf16, fp16 and fp32 only";
    case RouteOutcome::UnknownType:
      return "the data type's size is not known";
    case RouteOutcome::Empty:
      return "an empty collective has nothing to move";
    case RouteOutcome::InPlaceAllToAll:
      return "an in-place all-to-all is left to NCCL's own rules";
    case RouteOutcome::RootOutOfRange:
      return "a broadcast from a rank outside the communicator is left to NCCL, which reports it";
    case RouteOutcome::CaptureNotReady:
      return "captured into a CUDA graph before the route was set up (run the step once before capturing it)";
    case RouteOutcome::SeveralDevicesGroup:
      return "one thread's NCCL group drives ranks on several devices, which the route would run one by one";
    case RouteOutcome::RouteUnavailable:
      return "the copy-engine route is not available in this process";
    case RouteOutcome::RouteFailed:
      return "the copy-engine route failed earlier on this communicator";
    case RouteOutcome::kCount:
      break;
  }
  return "unknown";
}

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
  if (r.kind == Collective::AllToAll && r.in_place) return RouteOutcome::InPlaceAllToAll;
  if (r.kind == Collective::Broadcast && (r.root < 0 || r.root >= r.nranks)) return RouteOutcome::RootOutOfRange;
  if (facts.failed) return RouteOutcome::RouteFailed;
  if (facts.unavailable) return RouteOutcome::RouteUnavailable;
  if (facts.capture_not_ready) return RouteOutcome::CaptureNotReady;
  return RouteOutcome::CopyEngine;
}

}  // namespace tandem
