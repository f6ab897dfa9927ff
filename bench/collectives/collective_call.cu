#include "collectives/collective_call.h"
#include "tandem/cuda_check.h"
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

namespace {

// `call` on copy engines over `lanes` (CollectiveRoute::lanes); each function awaits its own NCCL
// calls.
void enqueue_on_copy_engines(const CopyEngineLanes& lanes, const CollectiveCall& c, void* scratch,
                             cudaStream_t stream) {
  const size_t count = size_t(c.count);
  switch (c.kind) {
    case Collective::AllReduce:
      copy_engine_all_reduce(lanes, c.send, c.recv, scratch, count, c.dtype, stream);
      return;
    case Collective::ReduceScatter:
      copy_engine_reduce_scatter(lanes, c.send, c.recv, scratch, count, c.dtype, stream);
      return;
    case Collective::AllGather:
      // In place (send is this rank's chunk of recv): NCCL's copy-engine all-gather, which only
      // copies to the peers. Out of place, NCCL's would copy this rank's own chunk first, on the SMs,
      // in one batch with the peers' copies: the exchange leaves that copy to this rank's own gather.
      copy_engine_all_gather(lanes, c.send, c.recv, count, c.dtype, stream);
      return;
    case Collective::AllToAll:
      // The exchange, for the same reason as an out-of-place all-gather.
      copy_engine_all_to_all(lanes, c.send, c.recv, count, c.dtype, stream);
      return;
  }
}

}  // namespace

void issue_collective(const CollectiveCall& c, int nranks, ncclComm_t comm, cudaStream_t stream,
                      const CollectiveRoute& route) {
  if (route.lanes) {
    enqueue_on_copy_engines(*route.lanes, c, route.copy_engine_scratch, stream);
    return;
  }
  const ncclDataType_t type = to_nccl(c.dtype);
  switch (c.kind) {
    case Collective::AllReduce:
      TANDEM_NCCL_CHECK(comm, ncclAllReduce(c.send, c.recv, size_t(c.count), type, ncclSum, comm, stream));
      break;
    case Collective::AllGather:
      TANDEM_NCCL_CHECK(comm, ncclAllGather(c.send, c.recv, size_t(c.count), type, comm, stream));
      break;
    case Collective::ReduceScatter:
      TANDEM_NCCL_CHECK(comm, ncclReduceScatter(c.send, c.recv, size_t(c.count), type, ncclSum, comm, stream));
      break;
    case Collective::AllToAll: {
      if (route.all_to_all_api) {
        // The same exchange (peer j's chunk at send + j count, from peer i at recv + i count) as one
        // collective, which NCCL's symmetric kernels can run; grouped point-to-point cannot.
        TANDEM_NCCL_CHECK(comm, ncclAlltoAll(c.send, c.recv, size_t(c.count), type, comm, stream));
        break;
      }
      // Grouped point-to-point, as frameworks issue all_to_all_single.
      const size_t chunk_bytes = size_t(c.count) * dtype_size(c.dtype);
      TANDEM_NCCL_CHECK(comm, ncclGroupStart());
      for (int peer = 0; peer < nranks; ++peer) {
        TANDEM_NCCL_CHECK(comm, ncclSend(static_cast<const char*>(c.send) + peer * chunk_bytes, size_t(c.count), type,
                                         peer, comm, stream));
        TANDEM_NCCL_CHECK(
            comm, ncclRecv(static_cast<char*>(c.recv) + peer * chunk_bytes, size_t(c.count), type, peer, comm, stream));
      }
      TANDEM_NCCL_CHECK(comm, ncclGroupEnd());
      break;
    }
  }
}

}  // namespace tandem::bench
