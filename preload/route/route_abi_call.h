#pragma once
// The one conversion of a call across the route library's C ABI, both ways: the interposer's
// tandem::CopyEngineCall (tandem/copy_engine_call.h) into the plain C tandem_nccl_route_call it
// passes to libtandem_nccl_route.so, and back inside that library. Header-only, C++: both sides
// include it, so the two cannot drift apart (tests/cpu/test_preload_nccl_route.cpp round-trips it).
#include "tandem/copy_engine_call.h"
#include "tandem_nccl_route.h"

namespace tandem::preload {

// The fields that cross as they are; `kind` and `reduction` cross as ints.
#define TANDEM_ROUTE_CALL_PLAIN_FIELDS(X) X(send) X(recv) X(count) X(dtype) X(scalar) X(device_scalar) X(root) X(stream)
#define TANDEM_ROUTE_CALL_COPY_FIELD(name) to.name = from.name;

inline tandem_nccl_route_call to_route_abi(const CopyEngineCall& from) {
  tandem_nccl_route_call to{};
  to.kind = static_cast<int>(from.kind);
  to.reduction = static_cast<int>(from.reduction);
  TANDEM_ROUTE_CALL_PLAIN_FIELDS(TANDEM_ROUTE_CALL_COPY_FIELD)
  return to;
}

// Whether a C caller's call names a kind and a reduction this library knows.
inline bool is_valid_route_abi(const tandem_nccl_route_call* c) {
  return c && c->kind >= 0 && c->kind < kCollectiveCount && c->reduction >= 0 &&
         c->reduction <= static_cast<int>(Reduction::Unsupported);
}

// A call is_valid_route_abi accepted.
inline CopyEngineCall from_route_abi(const tandem_nccl_route_call& from) {
  CopyEngineCall to;
  to.kind = static_cast<Collective>(from.kind);
  to.reduction = static_cast<Reduction>(from.reduction);
  TANDEM_ROUTE_CALL_PLAIN_FIELDS(TANDEM_ROUTE_CALL_COPY_FIELD)
  return to;
}

#undef TANDEM_ROUTE_CALL_COPY_FIELD
#undef TANDEM_ROUTE_CALL_PLAIN_FIELDS

}  // namespace tandem::preload
