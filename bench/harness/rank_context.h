#pragma once
// Everything one rank (one GPU, one host thread) needs: its device, streams, communicators and
// library handles, the other ranks (a Coordinator: threads of this process, or other processes), and
// waits that never hang.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ranks/coordinator.h"
#include "tandem/communicators.h"
#include "tandem/copy_engine.h"
#include "tandem/green_context.h"
#include "tandem/nccl_wait.h"
#include "tandem/occupancy.h"
#include "tandem/policy.h"
#include "tandem/streams.h"

namespace tandem::bench {

struct RankContext {
  RankContext(int rank, int nranks, int device, Coordinator& group, ncclComm_t comm, double timeout_s);
  ~RankContext();
  RankContext(const RankContext&) = delete;
  RankContext& operator=(const RankContext&) = delete;

  // Waits for `stream` to drain by polling, never blocking inside CUDA (tandem::await_stream under
  // wait_rules()): a collective whose peer never arrives would otherwise hang the thread forever.
  // Fails (aborting the communicators so every rank's kernels exit) when NCCL reports an
  // asynchronous error, another rank failed, or `timeout_s` passes; the error names the rank and
  // `step`.
  void wait(cudaStream_t stream, const std::string& step);
  // Communicators are non-blocking: an NCCL call may return before its host-side work (connection
  // setup with peers, on first use) is done. Call this after every NCCL call on `c`: it polls
  // ncclCommGetAsyncError until `c` is ready (tandem::await_communicator), with the same failure rules
  // as wait().
  void await_communicator(ncclComm_t c, const std::string& step);
  void await_communicator(const std::string& step) { await_communicator(comm, step); }

  // The rules of every wait on this rank (tandem/nccl_wait.h): `timeout_s`, failing at once when
  // another rank failed, aborting every communicator of this rank on failure.
  WaitRules wait_rules();

  // The communicator for a policy's NCCL settings (nccl-ctas, nccl-cga, nccl-cta-policy,
  // copy-engine): `comm` for the defaults, else one split from `comm` on first use
  // (tandem::PolicyCommunicators). Every rank must ask for the same settings in the same order, as
  // with any communicator creation.
  ncclComm_t communicator_for(const OverlapPolicy& policy);
  // The lanes of a copy-engine policy (lane 0 is communicator_for(policy)), created on first use by
  // every rank together.
  const CopyEngineLanes& copy_engine_lanes(const OverlapPolicy& policy);
  // A stream whose work runs only on a green context of `sm_count` SMs (created on first use).
  cudaStream_t green_stream(int sm_count);

  int rank;
  int nranks;
  int device;
  Coordinator& group;  // the ranks: barrier, broadcast, all-gather, failure
  ncclComm_t comm;     // default settings; owned: destroyed (or aborted after a failure) with the context
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
  std::vector<ncclComm_t> all_communicators() const;
  void abort_communicators() noexcept;
  bool comms_aborted_ = false;
  std::unique_ptr<PolicyCommunicators> policy_comms_;  // split from `comm`
  std::map<std::string, std::unique_ptr<CopyEngineLanes>> lanes_by_settings_;
  std::map<int, std::unique_ptr<GreenContext>> green_contexts_;
};

}  // namespace tandem::bench
