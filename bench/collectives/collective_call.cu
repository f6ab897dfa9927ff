#include "collectives/collective_call.h"
#include "tandem/cuda_check.h"
#include "tandem/enum_table.h"
#include "tandem/nccl_check.h"

namespace tandem::bench {

double CollectiveCall::hbm_bytes(int n) const {
  const double element = double(dtype_size(dtype));
  const double send_bytes = double(send_elements(n)) * element, recv_bytes = double(recv_elements(n)) * element;
  const char* out = static_cast<const char*>(recv);
  const char* in = static_cast<const char*>(send);
  const bool gathers_in_place = kind == Collective::AllGather && in >= out && in < out + size_t(recv_bytes);
  return send_bytes + (gathers_in_place ? recv_bytes - send_bytes : recv_bytes);
}

CopyEngineCall CollectiveCall::copy_engine_call(cudaStream_t stream) const {
  CopyEngineCall c;
  c.kind = kind;
  c.send = send;
  c.recv = recv;
  c.count = size_t(count);
  c.dtype = to_nccl(dtype);
  c.stream = stream;
  return c;
}

namespace {

// Each kind's NCCL call, in Collective's order (the broadcast's from rank 0; the benchmark measures
// the others, kBenchmarkCollectives). An all-to-all is one ncclAlltoAll or grouped point-to-point, as
// CollectiveIssue::all_to_all_api says.
using NcclIssue = void (*)(const CollectiveCall&, int nranks, ncclComm_t, cudaStream_t, const CollectiveIssue&);

void issue_all_reduce(const CollectiveCall& c, int, ncclComm_t comm, cudaStream_t stream, const CollectiveIssue&) {
  TANDEM_NCCL_CHECK(comm, ncclAllReduce(c.send, c.recv, size_t(c.count), to_nccl(c.dtype), ncclSum, comm, stream));
}

void issue_reduce_scatter(const CollectiveCall& c, int, ncclComm_t comm, cudaStream_t stream, const CollectiveIssue&) {
  TANDEM_NCCL_CHECK(comm, ncclReduceScatter(c.send, c.recv, size_t(c.count), to_nccl(c.dtype), ncclSum, comm, stream));
}

void issue_all_gather(const CollectiveCall& c, int, ncclComm_t comm, cudaStream_t stream, const CollectiveIssue&) {
  TANDEM_NCCL_CHECK(comm, ncclAllGather(c.send, c.recv, size_t(c.count), to_nccl(c.dtype), comm, stream));
}

void issue_all_to_all(const CollectiveCall& c, int nranks, ncclComm_t comm, cudaStream_t stream,
                      const CollectiveIssue& issue) {
  const ncclDataType_t type = to_nccl(c.dtype);
  if (issue.all_to_all_api) {
    // The same exchange (peer j's chunk at send + j count, from peer i at recv + i count) as one
    // collective, which NCCL's symmetric kernels can run; grouped point-to-point cannot.
    TANDEM_NCCL_CHECK(comm, ncclAlltoAll(c.send, c.recv, size_t(c.count), type, comm, stream));
    return;
  }
  // Grouped point-to-point, as frameworks issue all_to_all_single.
  const size_t chunk_bytes = size_t(c.count) * dtype_size(c.dtype);
  TANDEM_NCCL_CHECK(comm, ncclGroupStart());
  for (int peer = 0; peer < nranks; ++peer) {
    TANDEM_NCCL_CHECK(comm, ncclSend(static_cast<const char*>(c.send) + peer * chunk_bytes, size_t(c.count), type, peer,
                                     comm, stream));
    TANDEM_NCCL_CHECK(
        comm, ncclRecv(static_cast<char*>(c.recv) + peer * chunk_bytes, size_t(c.count), type, peer, comm, stream));
  }
  TANDEM_NCCL_CHECK(comm, ncclGroupEnd());
}

void issue_broadcast(const CollectiveCall& c, int, ncclComm_t comm, cudaStream_t stream, const CollectiveIssue&) {
  TANDEM_NCCL_CHECK(comm, ncclBroadcast(c.send, c.recv, size_t(c.count), to_nccl(c.dtype), 0, comm, stream));
}

constexpr NcclIssue kNcclIssue[] = {issue_all_reduce, issue_reduce_scatter, issue_all_gather, issue_all_to_all,
                                    issue_broadcast};
static_assert(covers(kNcclIssue, Collective::Broadcast), "one NCCL call per Collective");

}  // namespace

void issue_collective(const CollectiveCall& c, int nranks, ncclComm_t comm, cudaStream_t stream,
                      const CollectiveIssue& issue) {
  if (issue.lanes) {
    // On copy engines: the library's windowed collective (its plan says which steps each kind takes;
    // it awaits its own NCCL calls).
    copy_engine_collective(*issue.lanes, c.copy_engine_call(stream), issue.copy_engine_scratch);
    return;
  }
  table_entry(kNcclIssue, c.kind)(c, nranks, comm, stream, issue);
}

}  // namespace tandem::bench
