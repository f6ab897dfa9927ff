#include <exception>

#include "harness/rank_context.h"
#include "tandem/cuda_check.h"
#include "tandem/device.h"
#include "tandem/library_checks.h"
#include "tandem/nccl_config.h"

namespace tandem::bench {

namespace {

// Device-to-device copy bandwidth counting bytes read plus bytes written: the ceiling for the
// HBM term of t_bound. Measured rather than taken from a datasheet.
double measure_copy_bandwidth_gbps(cudaStream_t stream) {
  const size_t bytes = 1ull << 30;
  void* a = nullptr;
  void* b = nullptr;
  TANDEM_CUDA_CHECK(cudaMalloc(&a, bytes));
  TANDEM_CUDA_CHECK(cudaMalloc(&b, bytes));
  TANDEM_CUDA_CHECK(cudaMemsetAsync(a, 1, bytes, stream));
  cudaEvent_t start, stop;
  TANDEM_CUDA_CHECK(cudaEventCreate(&start));
  TANDEM_CUDA_CHECK(cudaEventCreate(&stop));
  float best_ms = 1e30f;
  for (int i = 0; i < 5; ++i) {
    TANDEM_CUDA_CHECK(cudaEventRecord(start, stream));
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream));
    TANDEM_CUDA_CHECK(cudaEventRecord(stop, stream));
    TANDEM_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    TANDEM_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (i > 0 && ms < best_ms) best_ms = ms;  // the first copy is a warm-up
  }
  TANDEM_CUDA_CHECK(cudaEventDestroy(start));
  TANDEM_CUDA_CHECK(cudaEventDestroy(stop));
  TANDEM_CUDA_CHECK(cudaFree(a));
  TANDEM_CUDA_CHECK(cudaFree(b));
  return 2.0 * bytes / (best_ms * 1e-3) / 1e9;
}

int set_device_and_return(int device) {
  TANDEM_CUDA_CHECK(cudaSetDevice(device));
  return device;
}

}  // namespace

RankContext::RankContext(int rank_, int nranks_, int device_, Coordinator& group_, ncclComm_t comm_, double timeout)
    : rank(rank_),
      nranks(nranks_),
      device(set_device_and_return(device_)),  // before the streams below are created on it
      group(group_),
      comm(comm_),
      timeout_s(timeout),
      limits(query_device_limits(device_)),
      compute(make_compute_stream()),
      comm_default(PriorityStream(stream_priority_range().least)),
      comm_high(make_comm_stream()) {
  TANDEM_CUBLAS_CHECK(cublasLtCreate(&cublaslt));
  TANDEM_CUDA_CHECK(cudaMalloc(&cublaslt_workspace, cublaslt_workspace_bytes));
  hbm_bandwidth_gbps = measure_copy_bandwidth_gbps(compute);
}

RankContext::~RankContext() {
  // Destructors must not throw. After a failure the communicators are aborted, not destroyed:
  // ncclCommDestroy would wait for peers that may never come. Unwinding from this rank's own error
  // is such a failure too, even before anyone has marked the group failed.
  bool failing = std::uncaught_exceptions() > 0 || group.failed();
  // Every rank's work is done before any communicator goes: the last rank's destroy frees its
  // peers' NCCL memory too, which must not race a peer still freeing its own buffers.
  if (!failing) {
    try {
      group.barrier();
    } catch (...) {
      failing = true;
    }
  }
  // Split communicators before the one they were split from; tandem::close_communicator serialises
  // the destroys and aborts of every rank of this process.
  const bool healthy = !failing && !comms_aborted_;
  for (auto& entry : lanes_by_settings_)
    if (entry.second) entry.second->close(healthy);
  lanes_by_settings_.clear();
  if (policy_comms_) policy_comms_->close(healthy);
  policy_comms_.reset();
  close_communicator(comm, healthy, timeout_s);
  green_contexts_.clear();
  if (cublaslt) cublasLtDestroy(cublaslt);
  if (cublaslt_workspace) cudaFree(cublaslt_workspace);
}

std::vector<ncclComm_t> RankContext::all_communicators() const {
  std::vector<ncclComm_t> out;
  if (comm) out.push_back(comm);
  if (policy_comms_)
    for (ncclComm_t c : policy_comms_->owned()) out.push_back(c);
  // Lane 0 is a policy communicator, listed above.
  for (const auto& entry : lanes_by_settings_)
    if (entry.second) out.insert(out.end(), entry.second->comms().begin() + 1, entry.second->comms().end());
  return out;
}

void RankContext::abort_communicators() noexcept {
  if (comms_aborted_) return;
  // Aborting makes NCCL's kernels on every rank exit, so the peers' waits end too.
  for (auto& entry : lanes_by_settings_)
    if (entry.second) entry.second->abort();
  if (policy_comms_) policy_comms_->abort();
  abort_communicator(comm);
  comm = nullptr;
  comms_aborted_ = true;
}

WaitRules RankContext::wait_rules() {
  WaitRules rules;
  rules.timeout_s = timeout_s;
  rules.who = "rank " + std::to_string(rank);
  rules.timeout_setting = "--timeout";
  rules.each_poll = [this] { group.throw_if_failed(); };
  rules.on_failure = [this] { abort_communicators(); };
  return rules;
}

void RankContext::wait(cudaStream_t stream, const std::string& step) {
  await_stream(stream, all_communicators(), wait_rules(), step);
}

void RankContext::await_communicator(ncclComm_t c, const std::string& step) {
  TANDEM_REQUIRE(c != nullptr && !comms_aborted_, "rank " + std::to_string(rank) + ": communicator already aborted");
  tandem::await_communicator(c, wait_rules(), step);
}

ncclComm_t RankContext::communicator_for(const OverlapPolicy& policy) {
  if (uses_default_nccl_settings(policy)) return comm;
  TANDEM_REQUIRE(!comms_aborted_, "rank " + std::to_string(rank) + ": communicators already aborted");
  if (!policy_comms_) policy_comms_ = std::make_unique<PolicyCommunicators>(comm, wait_rules());
  return policy_comms_->communicator_for(policy);
}

const CopyEngineLanes& RankContext::copy_engine_lanes(const OverlapPolicy& policy) {
  TANDEM_REQUIRE(policy.copy_engine, "copy-engine lanes for a policy without copy-engine");
  auto& slot = lanes_by_settings_[nccl_settings_key(policy)];
  if (slot) return *slot;
  ncclComm_t lane0 = communicator_for(policy);
  slot = std::make_unique<CopyEngineLanes>(lane0, policy_comms_->config_for(policy), wait_rules());
  return *slot;
}

cudaStream_t RankContext::green_stream(int sm_count) {
  auto& slot = green_contexts_[sm_count];
  if (!slot) slot = std::make_unique<GreenContext>(device, sm_count);
  return slot->stream();
}

}  // namespace tandem::bench
