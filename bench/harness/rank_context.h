#pragma once
// Everything one rank (one GPU, one host thread) needs: its device, streams, communicator and
// library handles, and a wait that never hangs.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>
#include <vector>

#include "harness/rank_group.h"
#include "tandem/occupancy.h"
#include "tandem/streams.h"

namespace tandem::bench {

struct RankContext {
  RankContext(int rank, int nranks, int device, RankGroup& group, ncclComm_t comm, double timeout_s);
  ~RankContext();
  RankContext(const RankContext&) = delete;
  RankContext& operator=(const RankContext&) = delete;

  // Waits for `stream` to drain by polling, never blocking inside CUDA: a collective whose peer never
  // arrives would otherwise hang the thread forever. Fails (aborting the communicator so every
  // rank's kernels exit) when NCCL reports an asynchronous error, another rank failed, or
  // `timeout_s` passes; the error names the rank and `step`.
  void wait(cudaStream_t stream, const std::string& step);

  int rank;
  int nranks;
  int device;
  RankGroup& group;
  ncclComm_t comm;  // owned: destroyed (or aborted after a failure) with the context
  double timeout_s;
  DeviceLimits limits;
  // Compute always runs at the least priority. The collective runs on `comm_default` (the same,
  // least, priority: what a framework gets by default) or on `comm_high` (the greatest).
  PriorityStream compute;
  PriorityStream comm_default;
  PriorityStream comm_high;
  cublasLtHandle_t cublaslt = nullptr;
  void* cublaslt_workspace = nullptr;
  size_t cublaslt_workspace_bytes = 64ull << 20;
  double hbm_bandwidth_gbps = 0;  // measured device-to-device copy bandwidth (read + write)

 private:
  void abort_communicator();
  bool comm_aborted_ = false;
};

// Creates one communicator per device from the calling thread, inside one NCCL group.
std::vector<ncclComm_t> create_communicators(const std::vector<int>& devices);

}  // namespace tandem::bench
