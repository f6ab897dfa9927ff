#include "nccl_route.h"

#include "stats.h"

namespace tandem::preload {

const char* to_string(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::AllReduce:
      return "ncclAllReduce";
    case CollectiveKind::ReduceScatter:
      return "ncclReduceScatter";
    case CollectiveKind::AllGather:
      return "ncclAllGather";
    case CollectiveKind::AllToAll:
      return "ncclAlltoAll";
    case CollectiveKind::kCount:
      break;
  }
  return "unknown";
}

const char* to_string(RouteOutcome outcome) {
  switch (outcome) {
    case RouteOutcome::CopyEngine:
      return "copy-engine";
    case RouteOutcome::NotRequested:
      return "not-requested";
    case RouteOutcome::UnknownCommunicator:
      return "unknown-communicator";
    case RouteOutcome::OpNotSum:
      return "op-not-sum";
    case RouteOutcome::NoSumKernel:
      return "no-sum-kernel";
    case RouteOutcome::CountNotDivisible:
      return "count-not-divisible";
    case RouteOutcome::UnsupportedType:
      return "unsupported-type";
    case RouteOutcome::Empty:
      return "empty";
    case RouteOutcome::InPlaceAllToAll:
      return "in-place-all-to-all";
    case RouteOutcome::InsideGroup:
      return "inside-group";
    case RouteOutcome::NonBlockingCommunicator:
      return "non-blocking-communicator";
    case RouteOutcome::StreamCapturing:
      return "stream-capturing";
    case RouteOutcome::RouteUnavailable:
      return "route-unavailable";
    case RouteOutcome::RouteFailed:
      return "route-failed";
    case RouteOutcome::kCount:
      break;
  }
  return "unknown";
}

RouteOutcome decide_route(const CollectiveRequest& r, const RouteFacts& facts) {
  if (!facts.copy_engine_requested) return RouteOutcome::NotRequested;
  if (r.nranks <= 0) return RouteOutcome::UnknownCommunicator;
  const bool reduces = r.kind == CollectiveKind::AllReduce || r.kind == CollectiveKind::ReduceScatter;
  if (reduces && !r.op_is_sum) return RouteOutcome::OpNotSum;
  if (r.type == ElementType::Other) return reduces ? RouteOutcome::NoSumKernel : RouteOutcome::UnsupportedType;
  if (r.count == 0) return RouteOutcome::Empty;
  // An all-reduce is a reduce-scatter of count / nranks elements per rank and an all-gather of them;
  // the other kinds take a per-rank count already.
  if (r.kind == CollectiveKind::AllReduce && r.count % static_cast<size_t>(r.nranks) != 0)
    return RouteOutcome::CountNotDivisible;
  if (r.kind == CollectiveKind::AllToAll && r.in_place) return RouteOutcome::InPlaceAllToAll;
  // The route issues several NCCL calls of its own, awaited one by one: inside the program's group
  // NCCL would only queue them until ncclGroupEnd, and the waits would never end.
  if (facts.inside_group) return RouteOutcome::InsideGroup;
  // A non-blocking communicator's program polls ncclCommGetAsyncError for each call; the route's own
  // waits would change when the call returns (and split from a communicator the program may still be
  // initialising): left to NCCL.
  if (facts.non_blocking_communicator) return RouteOutcome::NonBlockingCommunicator;
  if (facts.route_failed) return RouteOutcome::RouteFailed;
  if (facts.route_unavailable) return RouteOutcome::RouteUnavailable;
  return RouteOutcome::CopyEngine;
}

uint64_t payload_bytes(const CollectiveRequest& r) {
  const uint64_t ranks = r.kind == CollectiveKind::AllReduce || r.nranks <= 0 ? 1 : static_cast<uint64_t>(r.nranks);
  // Saturating (stats.h): a count no buffer has (SIZE_MAX) must not wrap into a small total.
  return saturating_product(saturating_product(static_cast<uint64_t>(r.count), r.element_bytes), ranks);
}

}  // namespace tandem::preload
