#pragma once
// Which route a collective the program issues takes: tandem's copy-engine collectives, or NCCL's own
// kernels and why. Pure (no NCCL call, no NCCL header), so every rule is tested on CPU; the hooks
// (nccl_hooks.cpp) translate NCCL's arguments into a CollectiveRequest.
#include <cstddef>
#include <cstdint>

namespace tandem::preload {

enum class CollectiveKind : uint8_t { AllReduce, ReduceScatter, AllGather, AllToAll, kCount };
inline constexpr int kCollectiveKindCount = static_cast<int>(CollectiveKind::kCount);
// NCCL's function name ("ncclAllReduce"): what the program called, as the summary shows it.
const char* to_string(CollectiveKind);

// The element types the copy-engine reductions have a sum kernel for, and everything else.
enum class ElementType : uint8_t { Bf16, Fp16, Fp32, Other };

// Keep kCount last; the order is the summary's.
enum class RouteOutcome : uint8_t {
  CopyEngine,               // taken by tandem's copy-engine collective
  NotRequested,             // the policy has no `copy-engine`: NCCL's kernels, as without tandem
  UnknownCommunicator,      // created where the interposer did not see it (its size is unknown)
  OpNotSum,                 // the copy-engine reductions only sum
  NoSumKernel,              // a reduction of an element type other than bf16, fp16, fp32
  UnsupportedType,          // an all-gather or all-to-all of another element type (the route moves those three)
  Empty,                    // count 0: nothing to move, NCCL returns at once
  CountNotDivisible,        // all-reduce: count not a multiple of the ranks (the chunks must be equal)
  InPlaceAllToAll,          // send and receive buffers are the same: undefined in NCCL too
  InsideGroup,              // between ncclGroupStart and ncclGroupEnd: the route issues NCCL calls of its own
  NonBlockingCommunicator,  // the program's communicator is non-blocking (config.blocking = 0)
  StreamCapturing,          // the stream is being captured into a CUDA graph
  RouteUnavailable,         // the route library could not be loaded, or made no route for this communicator
  RouteFailed,              // the route failed on this communicator earlier (the program got an NCCL error)
  kCount
};
inline constexpr int kRouteOutcomeCount = static_cast<int>(RouteOutcome::kCount);
const char* to_string(RouteOutcome);

struct CollectiveRequest {
  CollectiveKind kind = CollectiveKind::AllReduce;
  size_t count = 0;  // NCCL's count argument: per rank for reduce-scatter, all-gather, all-to-all
  ElementType type = ElementType::Other;
  size_t element_bytes = 0;
  bool op_is_sum = false;  // ignored for all-gather and all-to-all, which do not reduce
  int nranks = 0;          // 0: communicator unknown
  bool in_place = false;   // NCCL's in-place rule for the kind (send == recv, or recv + rank * count)
};

// What the decision needs beyond the call's arguments. Every fact is the same on every rank of a
// communicator for the same call sequence (a program's group calls and communicator kinds match
// across ranks; a route library that loads on one rank loads on all of the same installation), so
// every rank takes the same route, as the copy-engine collectives require.
struct RouteFacts {
  bool copy_engine_requested = false;      // the policy names `copy-engine`
  bool inside_group = false;               // this thread is inside ncclGroupStart/ncclGroupEnd
  bool non_blocking_communicator = false;  // created with config.blocking = 0
  bool route_unavailable = false;          // the route library or this communicator's route is missing
  bool route_failed = false;               // this communicator's route failed earlier
};

// The policy's wish first (without it nothing else matters), then what makes the call ineligible
// whatever happens at run time, then the state of the program (a group, a communicator kind) and
// last the route itself.
RouteOutcome decide_route(const CollectiveRequest&, const RouteFacts&);

uint64_t payload_bytes(const CollectiveRequest&);

}  // namespace tandem::preload
