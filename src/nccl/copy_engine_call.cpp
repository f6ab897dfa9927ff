// A copy-engine call's request (tandem/copy_engine_call.h). Header-only use of nccl.h, like
// dtype.cpp: the interposer compiles it in too.
#include "tandem/copy_engine_call.h"

#include "tandem/dtype.h"

namespace tandem {

RouteRequest route_request(const CopyEngineCall& c, int nranks, int rank) {
  RouteRequest r;
  r.kind = c.kind;
  r.count = c.count;
  r.element_bytes = nccl_type_bytes(c.dtype);
  r.has_sum_kernel = from_nccl(c.dtype).has_value();
  r.reduction = c.reduction;
  r.nranks = nranks;
  r.rank = rank;
  r.in_place = is_in_place(c.kind, c.send, c.recv, c.count, r.element_bytes, rank);
  r.root = c.root;
  return r;
}

}  // namespace tandem
