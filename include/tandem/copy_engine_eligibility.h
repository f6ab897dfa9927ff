#pragma once
// Which collectives take tandem's copy-engine route, and why the others stay with NCCL: the one rule
// that the interposer behind `tandem run`, tandem.torch and the route itself apply. Pure (no NCCL or
// CUDA header), so every rule is tested on CPU.
//
// Every fact the rule reads is the same on every rank of a communicator for the same sequence of
// calls (a call's arguments, the communicator's size, the policy, whether the route exists or failed,
// whether the stream is being captured and the route was set up before), so every rank takes the
// same route, as the copy-engine collectives require.
#include <cstddef>
#include <cstdint>

#include "tandem/collective.h"

namespace tandem {

// How a reduction combines the ranks' data. NCCL's sum, average (ncclAvg) and pre-multiplied sum
// (ncclRedOpCreatePreMulSum) take the route, and so does PyTorch's DDP reduction (each rank's data
// divided by the world size, then summed), which tandem.torch's hook fuses into it. Min, max,
// product and any other op stay with NCCL.
enum class Reduction : uint8_t { Sum, Average, PreMulSum, PreDivSum, Unsupported };
const char* to_string(Reduction);
// The reduction an NCCL op stands for, by nccl.h's values (no NCCL header here): ncclSum 0, ncclProd 1,
// ncclMax 2, ncclMin 3, ncclAvg 4; ops from ncclNumOps (5) on are the program's own, made per
// communicator by ncclRedOpCreatePreMulSum (the only kind NCCL lets a program make).
// `known_pre_mul_sum`: the caller saw that op made on this communicator.
Reduction reduction_of(int nccl_op, bool known_pre_mul_sum);

// What the rule reads of one call (tandem/copy_engine_call.h's route_request makes it from a call).
struct RouteRequest {
  Collective kind = Collective::AllReduce;
  uint64_t count = 0;                    // NCCL's count for the kind
  size_t element_bytes = 0;              // 0: a data type the caller does not know
  bool has_sum_kernel = false;           // bf16, fp16 or fp32: the types the route can add
  Reduction reduction = Reduction::Sum;  // read for all-reduce and reduce-scatter only
  int nranks = 0;                        // 0: the communicator's size is not known
  int rank = 0;                          // this rank in the communicator
  bool in_place = false;                 // NCCL's in-place rule for the kind (tandem::is_in_place)
  int root = 0;                          // broadcast: the rank whose data every rank receives
};

// What the caller knows beyond the call's arguments.
struct RouteFacts {
  bool requested = true;     // the policy names `copy-engine`
  bool unavailable = false;  // no route library, or no route could be made for this communicator
  bool failed = false;       // the route failed on this communicator earlier
};

// Keep kCount last. The order is the summary's.
enum class RouteOutcome : uint8_t {
  CopyEngine,           // tandem's copy-engine collective
  NotRequested,         // the policy has no `copy-engine`: NCCL's kernels, as without tandem
  UnknownCommunicator,  // its size is not known (created where the interposer did not see it, or not ready)
  OpNotSupported,       // min, max, product or another op the route does not compute
  NoSumKernel,          // a reduction of a type other than bf16, fp16, fp32 (integers, fp64, fp8)
  UnknownType,          // a data type whose size is not known
  Empty,                // count 0: nothing to move, NCCL returns at once
  SingleRank,           // a communicator of one rank exchanges nothing: NCCL's local copy, no window memory
  InPlaceAllToAll,      // one buffer for both sides: NCCL's own rules for it apply
  RootOutOfRange,       // a broadcast from a rank the communicator does not have: NCCL reports it
  CaptureNotReady,      // captured into a CUDA graph before the route's lanes and pool were set up
  SeveralDevicesGroup,  // one thread's NCCL group drives ranks on several devices: the route would run them
                        // one after the other, and each waits for the others (the interposer's groups)
  NonBlockingGroup,     // the group's NCCL part is on a non-blocking communicator: NCCL issues it after
                        // ncclGroupEnd returns, and the route would have to wait for it (the interposer's groups)
  CommunicatorGone,     // held in a group whose communicator the program destroyed or aborted before the
                        // group's end: nothing runs on it, as in NCCL (the interposer's groups)
  RouteUnavailable,     // the route library could not be loaded, or made no route for this communicator
  RouteFailed,          // the route failed on this communicator earlier (the program got an NCCL error)
  kCount
};
inline constexpr int kRouteOutcomeCount = static_cast<int>(RouteOutcome::kCount);
// "copy-engine", "op-not-supported", ...: the summary's and the JSON's names.
const char* to_string(RouteOutcome);
// Why a call took that route, in a few words (logs, tandem.torch's stats, docs).
const char* explain(RouteOutcome);

// The policy's wish first (without it nothing else matters), then what makes the call ineligible
// whatever happens at run time, then the route's own state.
RouteOutcome decide_route(const RouteRequest&, const RouteFacts& = {});

}  // namespace tandem
