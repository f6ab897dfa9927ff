#pragma once
// Everything one rank (one GPU, one host thread) needs: its device, streams, communicators and
// library handles, the other ranks (a Coordinator: threads of this process, or other processes), and
// waits that never hang.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ranks/coordinator.h"
#include "tandem/green_context.h"
#include "tandem/occupancy.h"
#include "tandem/policy.h"
#include "tandem/streams.h"

namespace tandem::bench {

// Copy-engine lanes (harness/copy_engine_reduction.h): a copy-engine policy's communicator once per
// rank (lane 0 is RankContext::communicator_for itself), so that one collective per lane can run at
// once, and a side stream per further lane at each comm priority, with the events that fork them
// from the caller's stream and join them back.
struct CopyEngineLanes {
  CopyEngineLanes() = default;
  CopyEngineLanes(const CopyEngineLanes&) = delete;
  CopyEngineLanes& operator=(const CopyEngineLanes&) = delete;
  ~CopyEngineLanes();
  std::vector<ncclComm_t> comms;
  std::vector<PriorityStream> high, low;  // lanes 1.., at the greatest and the least priority
  cudaEvent_t fork = nullptr;
  std::vector<cudaEvent_t> joins;  // lanes 1..
};

struct RankContext {
  RankContext(int rank, int nranks, int device, Coordinator& group, ncclComm_t comm, double timeout_s);
  ~RankContext();
  RankContext(const RankContext&) = delete;
  RankContext& operator=(const RankContext&) = delete;

  // Waits for `stream` to drain by polling, never blocking inside CUDA: a collective whose peer never
  // arrives would otherwise hang the thread forever. Fails (aborting the communicators so every
  // rank's kernels exit) when NCCL reports an asynchronous error, another rank failed, or
  // `timeout_s` passes; the error names the rank and `step`.
  void wait(cudaStream_t stream, const std::string& step);
  // Communicators are non-blocking: an NCCL call may return before its host-side work (connection
  // setup with peers, on first use) is done. Call this after every NCCL call on `c`: it polls
  // ncclCommGetAsyncError until `c` is ready, with the same failure rules as wait().
  void await_communicator(ncclComm_t c, const std::string& step);
  void await_communicator(const std::string& step) { await_communicator(comm, step); }

  // The communicator for a policy's NCCL settings (nccl-ctas, nccl-cga, nccl-cta-policy,
  // copy-engine): `comm` for the defaults, else one created on first use. Every rank must ask for
  // the same settings in the same order, as with any communicator creation.
  ncclComm_t communicator_for(const OverlapPolicy& policy);
  // The lanes of a copy-engine policy, created on first use by every rank together.
  const CopyEngineLanes& copy_engine_lanes(const OverlapPolicy& policy);
  // A stream whose work runs only on a green context of `sm_count` SMs (created on first use).
  cudaStream_t green_stream(int sm_count);

  int rank;
  int nranks;
  int device;
  Coordinator& group;  // the ranks: barrier, broadcast, all-gather, failure
  ncclComm_t comm;  // default settings; owned: destroyed (or aborted after a failure) with the context
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
  void abort_communicators();
  bool finalize(ncclComm_t c) noexcept;
  // Throws (after aborting) if another rank failed or the deadline passed.
  void check_deadline(std::chrono::steady_clock::time_point deadline, const std::string& step);
  void throw_if_async_error(ncclComm_t c, const std::string& step);
  bool comms_aborted_ = false;
  // The ncclConfig_t of a policy's settings and the key its communicators are filed under.
  static ncclConfig_t config_for(const OverlapPolicy& policy, std::string& key);
  ncclComm_t communicator_with(const ncclConfig_t& config, const std::string& key, const std::string& what);
  std::map<std::string, ncclComm_t> comms_by_settings_;
  std::map<std::string, std::unique_ptr<CopyEngineLanes>> lanes_by_settings_;
  std::map<int, std::unique_ptr<GreenContext>> green_contexts_;
};

}  // namespace tandem::bench
