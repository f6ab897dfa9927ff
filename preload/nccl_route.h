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
  CopyEngine,           // taken by tandem's copy-engine collective
  NotRequested,         // the policy has no `copy-engine`: NCCL's kernels, as without tandem
  UnknownCommunicator,  // created where the interposer did not see it (its size is unknown)
  OpNotSum,             // the copy-engine reductions only sum
  NoSumKernel,          // an element type other than bf16, fp16, fp32
  CountNotDivisible,    // all-reduce: count not a multiple of the ranks (the chunks must be equal)
  InPlaceAllToAll,      // send and receive buffers are the same: undefined in NCCL too
  RouteNotAvailable,    // eligible, but this build has no copy-engine data path yet
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

struct RouteFacts {
  bool copy_engine_requested = false;  // the policy names `copy-engine`
  bool copy_engine_available = false;  // the data path is present in this interposer
};

RouteOutcome decide_route(const CollectiveRequest&, const RouteFacts&);

// The collective's size as nccl-tests reports it: all-reduce count elements; the others count per
// rank times the ranks (the all-gather's output, the reduce-scatter's input, the all-to-all's
// buffer). An unknown communicator counts as one rank.
uint64_t payload_bytes(const CollectiveRequest&);

}  // namespace tandem::preload
