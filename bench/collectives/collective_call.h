#pragma once
// The one place the benchmark calls NCCL collectives and the library's copy-engine collectives:
// every case's program (harness/program.h) describes its collectives as CollectiveCalls, whose
// kinds, sizes and bus-bandwidth factors are the library's one record (tandem/collective.h), and
// issues them here.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tandem/collective.h"
#include "tandem/copy_engine.h"
#include "tandem/dtype.h"

namespace tandem::bench {

struct CollectiveCall {
  Collective kind = Collective::AllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  int64_t count = 0;  // NCCL's count for the kind (tandem/collective.h)
  DType dtype = DType::BF16;

  int64_t send_elements(int nranks) const { return int64_t(tandem::send_elements(kind, uint64_t(count), nranks)); }
  int64_t recv_elements(int nranks) const { return int64_t(tandem::recv_elements(kind, uint64_t(count), nranks)); }
  // nccl-tests size: the all-reduce buffer, the all-gather output, the reduce-scatter input, the
  // all-to-all buffer.
  uint64_t bytes(int nranks) const { return size_elements(kind, uint64_t(count), nranks) * dtype_size(dtype); }
  // Fewest bytes of device memory it moves: its input read once, its output written once. An
  // all-gather whose input lies in its output (NCCL's in-place form) writes no chunk of its own.
  double hbm_bytes(int nranks) const;
  const char* name() const { return to_string(kind); }
  // The same call as the library's copy-engine collectives take it (a plain sum: the benchmark's
  // collectives have no other reduction), on `stream`.
  CopyEngineCall copy_engine_call(cudaStream_t stream = nullptr) const;
};

// A case's collective with the name of the operation that issues it ("grad bucket 3"), so that what
// refuses it can name it.
struct NamedCollective {
  std::string name;
  CollectiveCall call;
};

// A case's collectives in program order over `nranks` ranks: what its window memory allocates and
// registers windows for (window_memory.h). The case's program (harness/program.h) lists them.
struct CaseCollectives {
  int nranks = 1;
  std::vector<NamedCollective> calls;
};

// How a collective is issued.
struct CollectiveIssue {
  // All-to-all as one ncclAlltoAll, the form NCCL's symmetric kernels take (and the collective
  // nccl-tests time), instead of grouped ncclSend/ncclRecv (how frameworks issue all_to_all_single).
  bool all_to_all_api = false;
  // Non-null: on copy engines (tandem/copy_engine.h) over these lanes, on whose communicators the
  // buffers are registered too; the reductions stage through `copy_engine_scratch` (registered, at
  // least the size of the send buffer).
  const CopyEngineLanes* lanes = nullptr;
  void* copy_engine_scratch = nullptr;
};

// Enqueues `call` on `stream` as `issue` says. Waiting for a non-blocking communicator to accept
// it is the caller's (RankContext::await_communicator); the copy-engine functions await their own.
void issue_collective(const CollectiveCall& call, int nranks, ncclComm_t comm, cudaStream_t stream,
                      const CollectiveIssue& issue = {});

}  // namespace tandem::bench
