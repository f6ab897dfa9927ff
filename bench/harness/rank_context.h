#pragma once
// Everything one rank (one GPU, one host thread) needs: its device, streams, communicator and
// library handles, and a wait that never hangs.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
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
  // Communicators are non-blocking: an NCCL call may return before its host-side work (connection
  // setup with peers, on first use) is done. Call this after every NCCL call: it polls
  // ncclCommGetAsyncError until the communicator is ready, with the same failure rules as wait().
  void await_communicator(const std::string& step);

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
  bool finalize_communicator() noexcept;
  // Throws (after aborting) if another rank failed or the deadline passed.
  void check_deadline(std::chrono::steady_clock::time_point deadline, const std::string& step);
  bool comm_aborted_ = false;
};

// Creates one non-blocking communicator per device from the calling thread, inside one NCCL group,
// and waits up to `timeout_s` for all of them to be ready.
std::vector<ncclComm_t> create_communicators(const std::vector<int>& devices, double timeout_s);

}  // namespace tandem::bench
