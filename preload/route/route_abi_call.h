#pragma once
// The one conversion of a call across the route library's C ABI, both ways: the interposer's
// tandem::CopyEngineCall (tandem/copy_engine_call.h) into the plain C tandem_nccl_route_call it
// passes to libtandem_nccl_route.so, and back inside that library. Header-only, C++: both sides
// include it, so the two cannot drift apart (tests/cpu/test_preload_nccl_route.cpp round-trips it).
#include "tandem/copy_engine_call.h"
#include "tandem_nccl_route.h"

namespace tandem::preload {

inline tandem_nccl_route_call to_route_abi(const CopyEngineCall& c) {
  tandem_nccl_route_call call{};
  call.kind = static_cast<int>(c.kind);
  call.send = c.send;
  call.recv = c.recv;
  call.count = c.count;
  call.dtype = c.dtype;
  call.reduction = static_cast<int>(c.reduction);
  call.scalar = c.scalar;
  call.device_scalar = c.device_scalar;
  call.root = c.root;
  call.stream = c.stream;
  return call;
}

// Whether a C caller's call names a kind and a reduction this library knows.
inline bool is_valid_route_abi(const tandem_nccl_route_call* c) {
  return c && c->kind >= 0 && c->kind < kCollectiveCount && c->reduction >= 0 &&
         c->reduction <= static_cast<int>(Reduction::Unsupported);
}

// A call is_valid_route_abi accepted.
inline CopyEngineCall from_route_abi(const tandem_nccl_route_call& c) {
  CopyEngineCall call;
  call.kind = static_cast<Collective>(c.kind);
  call.send = c.send;
  call.recv = c.recv;
  call.count = c.count;
  call.dtype = c.dtype;
  call.reduction = static_cast<Reduction>(c.reduction);
  call.scalar = c.scalar;
  call.device_scalar = c.device_scalar;
  call.root = c.root;
  call.stream = c.stream;
  return call;
}

}  // namespace tandem::preload
