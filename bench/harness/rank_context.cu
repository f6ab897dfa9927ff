#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "harness/rank_context.h"
#include "tandem/cuda_check.h"
#include "tandem/device.h"
#include "tandem/nccl_config.h"

namespace tandem::bench {

namespace {

std::chrono::steady_clock::time_point deadline_after(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

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

// NCCL frees the communicators of one process's ranks together, in whichever rank's destroy or abort
// comes last (NCCL init.cc, commReclaim), and from that rank's thread: with ranks as threads, two
// threads can be unmapping one device's NCCL memory at once. Twice in about twenty `tandem tune`
// runs (NCCL 2.28.3) that ended in "double free or corruption" inside cuMemUnmap under
// ncclCommDestroy. Teardown is serialised per process. It cannot deadlock: after a finalize, and in
// an abort, NCCL does not wait for the peers; only the last one cleans up.
std::mutex& teardown_mutex() {
  static std::mutex m;
  return m;
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
  for (ncclComm_t c : all_communicators()) {
    const bool destroy = !failing && !comms_aborted_ && finalize(c);
    const std::lock_guard<std::mutex> lock(teardown_mutex());
    if (destroy)
      ncclCommDestroy(c);
    else
      ncclCommAbort(c);
  }
  green_contexts_.clear();
  if (cublaslt) cublasLtDestroy(cublaslt);
  if (cublaslt_workspace) cudaFree(cublaslt_workspace);
}

std::vector<ncclComm_t> RankContext::all_communicators() const {
  std::vector<ncclComm_t> out;
  if (comm) out.push_back(comm);
  for (const auto& entry : comms_by_settings_)
    if (entry.second) out.push_back(entry.second);
  return out;
}

bool RankContext::finalize(ncclComm_t c) noexcept {
  // A non-blocking communicator finalizes in the background; destroy it only once that is done,
  // and give up (abort instead) after the timeout rather than hang at exit.
  const ncclResult_t started = ncclCommFinalize(c);
  if (started != ncclSuccess && started != ncclInProgress) return false;
  const auto deadline = deadline_after(timeout_s);
  for (;;) {
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(c, &state) != ncclSuccess) return false;
    if (state == ncclSuccess) return true;
    if (state != ncclInProgress || std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void RankContext::abort_communicators() {
  if (comms_aborted_) return;
  // Aborting makes NCCL's kernels on every rank exit, so the peers' waits end too.
  for (ncclComm_t c : all_communicators()) ncclCommAbort(c);
  comm = nullptr;
  comms_by_settings_.clear();
  comms_aborted_ = true;
}

void RankContext::check_deadline(std::chrono::steady_clock::time_point deadline, const std::string& step) {
  if (group.failed()) {
    abort_communicators();
    group.throw_if_failed();
  }
  if (std::chrono::steady_clock::now() > deadline) {
    abort_communicators();
    TANDEM_THROW("rank " + std::to_string(rank) + ": '" + step + "' did not finish within " +
                 std::to_string(static_cast<int>(timeout_s)) + " s (--timeout); communicators aborted");
  }
}

void RankContext::throw_if_async_error(ncclComm_t c, const std::string& step) {
  ncclResult_t async = ncclSuccess;
  TANDEM_NCCL_CHECK(c, ncclCommGetAsyncError(c, &async));
  if (async == ncclSuccess || async == ncclInProgress) return;
  const std::string reason = std::string(ncclGetErrorString(async)) + " (" + ncclGetLastError(c) + ")";
  abort_communicators();
  TANDEM_THROW("rank " + std::to_string(rank) + ": NCCL error during '" + step + "': " + reason);
}

void RankContext::wait(cudaStream_t stream, const std::string& step) {
  const auto deadline = deadline_after(timeout_s);
  for (;;) {
    const cudaError_t status = cudaStreamQuery(stream);
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) TANDEM_CUDA_CHECK(status);
    for (ncclComm_t c : all_communicators()) throw_if_async_error(c, step);
    check_deadline(deadline, step);
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void RankContext::await_communicator(ncclComm_t c, const std::string& step) {
  TANDEM_REQUIRE(c != nullptr && !comms_aborted_, "rank " + std::to_string(rank) + ": communicator already aborted");
  const auto deadline = deadline_after(timeout_s);
  for (;;) {
    ncclResult_t async = ncclSuccess;
    TANDEM_NCCL_CHECK(c, ncclCommGetAsyncError(c, &async));
    if (async == ncclSuccess) return;
    throw_if_async_error(c, step);
    check_deadline(deadline, step);
    std::this_thread::yield();
  }
}

ncclConfig_t RankContext::config_for(const OverlapPolicy& policy, std::string& key) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  apply_nccl_settings(policy, config);
  key = nccl_settings_key(policy);
  return config;
}

ncclComm_t RankContext::communicator_for(const OverlapPolicy& policy) {
  if (uses_default_nccl_settings(policy)) return comm;
  std::string key;
  const ncclConfig_t config = config_for(policy, key);
  return communicator_with(config, key, "communicator for " + to_string(policy));
}

ncclComm_t RankContext::communicator_with(const ncclConfig_t& config, const std::string& key, const std::string& what) {
  auto found = comms_by_settings_.find(key);
  if (found != comms_by_settings_.end()) return found->second;
  // Every rank reaches this point for the same settings, so rank 0's id reaches all of them.
  ncclUniqueId id{};
  if (rank == 0) TANDEM_NCCL_CHECK(nullptr, ncclGetUniqueId(&id));
  group.broadcast_from_rank0(&id, sizeof(id));
  ncclComm_t created = nullptr;
  ncclConfig_t own = config;  // ncclCommInitRankConfig takes a non-const config
  TANDEM_NCCL_CHECK(nullptr, ncclCommInitRankConfig(&created, nranks, id, rank, &own));
  comms_by_settings_[key] = created;  // owned from here on, even if initialisation fails below
  await_communicator(created, what);
  return created;
}

const CopyEngineLanes& RankContext::copy_engine_lanes(const OverlapPolicy& policy) {
  TANDEM_REQUIRE(policy.copy_engine, "copy-engine lanes for a policy without copy-engine");
  std::string key;
  const ncclConfig_t config = config_for(policy, key);
  auto& slot = lanes_by_settings_[key];
  if (slot) return *slot;
  auto lanes = std::make_unique<CopyEngineLanes>();
  lanes->comms.push_back(communicator_for(policy));
  const StreamPriorityRange range = stream_priority_range();
  for (int lane = 1; lane < nranks; ++lane) {
    lanes->comms.push_back(communicator_with(config, key + "lane" + std::to_string(lane),
                                             "copy-engine lane " + std::to_string(lane) + " of " + to_string(policy)));
    lanes->high.emplace_back(range.greatest);
    lanes->low.emplace_back(range.least);
    cudaEvent_t join = nullptr;
    TANDEM_CUDA_CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    lanes->joins.push_back(join);
  }
  TANDEM_CUDA_CHECK(cudaEventCreateWithFlags(&lanes->fork, cudaEventDisableTiming));
  slot = std::move(lanes);
  return *slot;
}

CopyEngineLanes::~CopyEngineLanes() {
  if (fork) cudaEventDestroy(fork);
  for (cudaEvent_t e : joins) cudaEventDestroy(e);
}

cudaStream_t RankContext::green_stream(int sm_count) {
  auto& slot = green_contexts_[sm_count];
  if (!slot) slot = std::make_unique<GreenContext>(device, sm_count);
  return slot->stream();
}

}  // namespace tandem::bench
