#include "nccl_route.h"

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
    case RouteOutcome::InPlaceAllToAll:
      return "in-place-all-to-all";
    case RouteOutcome::RouteNotAvailable:
      return "route-not-available";
    case RouteOutcome::kCount:
      break;
  }
  return "unknown";
}

// The policy's wish first (without it nothing else matters), then what makes this collective
// ineligible whatever the build, and last whether the route exists: the summary then tells which
// collectives the copy-engine route would take once it is there.
RouteOutcome decide_route(const CollectiveRequest& r, const RouteFacts& facts) {
  if (!facts.copy_engine_requested) return RouteOutcome::NotRequested;
  if (r.nranks <= 0) return RouteOutcome::UnknownCommunicator;
  const bool reduces = r.kind == CollectiveKind::AllReduce || r.kind == CollectiveKind::ReduceScatter;
  if (reduces && !r.op_is_sum) return RouteOutcome::OpNotSum;
  if (reduces && r.type == ElementType::Other) return RouteOutcome::NoSumKernel;
  // An all-reduce is a reduce-scatter of count / nranks elements per rank and an all-gather of them;
  // the other kinds take a per-rank count already.
  if (r.kind == CollectiveKind::AllReduce && r.count % static_cast<size_t>(r.nranks) != 0)
    return RouteOutcome::CountNotDivisible;
  if (r.kind == CollectiveKind::AllToAll && r.in_place) return RouteOutcome::InPlaceAllToAll;
  if (!facts.copy_engine_available) return RouteOutcome::RouteNotAvailable;
  return RouteOutcome::CopyEngine;
}

uint64_t payload_bytes(const CollectiveRequest& r) {
  const uint64_t ranks = r.kind == CollectiveKind::AllReduce || r.nranks <= 0 ? 1 : static_cast<uint64_t>(r.nranks);
  return static_cast<uint64_t>(r.count) * r.element_bytes * ranks;
}

}  // namespace tandem::preload
