#pragma once
// The one place the benchmark calls NCCL collectives and the library's copy-engine collectives:
// the microbenchmark's collectives (collectives/*.cu) and the scenarios' programs
// (scenarios/program.h) both describe a collective as a CollectiveCall and issue it here.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>

#include "tandem/copy_engine.h"
#include "tandem/dtype.h"

namespace tandem::bench {

struct CollectiveCall {
  enum class Kind { AllReduce, AllGather, ReduceScatter, AllToAll };
  Kind kind = Kind::AllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  // NCCL's count: all-reduce elements; all-gather send elements; reduce-scatter receive elements;
  // all-to-all elements per peer.
  int64_t count = 0;
  DType dtype = DType::BF16;

  int64_t send_elements(int nranks) const;
  int64_t recv_elements(int nranks) const;
  // nccl-tests size: the all-reduce buffer, the all-gather output, the reduce-scatter input, the
  // all-to-all buffer.
  uint64_t bytes(int nranks) const;
  const char* name() const;
};

// How a collective is issued.
struct CollectiveRoute {
  // All-to-all as one ncclAlltoAll, the form NCCL's symmetric kernels take, instead of grouped
  // ncclSend/ncclRecv (how frameworks issue all_to_all_single).
  bool all_to_all_api = false;
  // Non-null: on copy engines (tandem/copy_engine.h) over these lanes, on whose communicators the
  // buffers are registered too; the reductions stage through `copy_engine_scratch` (registered, at
  // least the size of the send buffer).
  const CopyEngineLanes* lanes = nullptr;
  void* copy_engine_scratch = nullptr;
};

// Enqueues `call` on `stream` as `route` says. Waiting for a non-blocking communicator to accept
// it is the caller's (RankContext::await_communicator); the copy-engine functions await their own.
void issue_collective(const CollectiveCall& call, int nranks, ncclComm_t comm, cudaStream_t stream,
                      const CollectiveRoute& route = {});

}  // namespace tandem::bench
