#include <chrono>
#include <thread>

#include "harness/rank_context.h"
#include "tandem/cuda_check.h"
#include "tandem/device.h"

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

int set_device_and_return(int device) {
  TANDEM_CUDA_CHECK(cudaSetDevice(device));
  return device;
}

}  // namespace

RankContext::RankContext(int rank_, int nranks_, int device_, RankGroup& group_, ncclComm_t comm_, double timeout)
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
  // Destructors must not throw. After a failure the communicator is aborted, not destroyed:
  // ncclCommDestroy would wait for peers that may never come.
  if (comm) {
    if (group.failed() || comm_aborted_ || !finalize_communicator())
      ncclCommAbort(comm);
    else
      ncclCommDestroy(comm);
  }
  if (cublaslt) cublasLtDestroy(cublaslt);
  if (cublaslt_workspace) cudaFree(cublaslt_workspace);
}

bool RankContext::finalize_communicator() noexcept {
  // A non-blocking communicator finalizes in the background; destroy it only once that is done,
  // and give up (abort instead) after the timeout rather than hang at exit.
  const ncclResult_t started = ncclCommFinalize(comm);
  if (started != ncclSuccess && started != ncclInProgress) return false;
  const auto deadline = deadline_after(timeout_s);
  for (;;) {
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return false;
    if (state == ncclSuccess) return true;
    if (state != ncclInProgress || std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void RankContext::abort_communicator() {
  if (comm && !comm_aborted_) {
    ncclCommAbort(comm);
    comm = nullptr;
    comm_aborted_ = true;
  }
}

void RankContext::check_deadline(std::chrono::steady_clock::time_point deadline, const std::string& step) {
  if (group.failed()) {
    abort_communicator();
    group.throw_if_failed();
  }
  if (std::chrono::steady_clock::now() > deadline) {
    abort_communicator();
    TANDEM_THROW("rank " + std::to_string(rank) + ": '" + step + "' did not finish within " +
                 std::to_string(static_cast<int>(timeout_s)) + " s (--timeout); communicators aborted");
  }
}

void RankContext::wait(cudaStream_t stream, const std::string& step) {
  const auto deadline = deadline_after(timeout_s);
  for (;;) {
    const cudaError_t status = cudaStreamQuery(stream);
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) TANDEM_CUDA_CHECK(status);
    if (comm) {
      ncclResult_t async = ncclSuccess;
      TANDEM_NCCL_CHECK(comm, ncclCommGetAsyncError(comm, &async));
      if (async != ncclSuccess && async != ncclInProgress) {
        const std::string reason = std::string(ncclGetErrorString(async)) + " (" + ncclGetLastError(comm) + ")";
        abort_communicator();
        TANDEM_THROW("rank " + std::to_string(rank) + ": NCCL error during '" + step + "': " + reason);
      }
    }
    check_deadline(deadline, step);
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void RankContext::await_communicator(const std::string& step) {
  const auto deadline = deadline_after(timeout_s);
  for (;;) {
    TANDEM_REQUIRE(comm != nullptr, "rank " + std::to_string(rank) + ": communicator already aborted");
    ncclResult_t async = ncclSuccess;
    TANDEM_NCCL_CHECK(comm, ncclCommGetAsyncError(comm, &async));
    if (async == ncclSuccess) return;
    if (async != ncclInProgress) {
      const std::string reason = std::string(ncclGetErrorString(async)) + " (" + ncclGetLastError(comm) + ")";
      abort_communicator();
      TANDEM_THROW("rank " + std::to_string(rank) + ": NCCL error during '" + step + "': " + reason);
    }
    check_deadline(deadline, step);
    std::this_thread::yield();
  }
}

std::vector<ncclComm_t> create_communicators(const std::vector<int>& devices, double timeout_s) {
  ncclUniqueId id;
  TANDEM_NCCL_CHECK(nullptr, ncclGetUniqueId(&id));
  const int n = static_cast<int>(devices.size());
  std::vector<ncclComm_t> comms(n, nullptr);
  // Non-blocking: no NCCL call may wait on the host for a peer that never comes; we poll instead.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  // One thread initialises every rank, so the calls must be grouped or the first would wait for
  // the others.
  TANDEM_NCCL_CHECK(nullptr, ncclGroupStart());
  for (int rank = 0; rank < n; ++rank) {
    TANDEM_CUDA_CHECK(cudaSetDevice(devices[rank]));
    TANDEM_NCCL_CHECK(nullptr, ncclCommInitRankConfig(&comms[rank], n, id, rank, &config));
  }
  TANDEM_NCCL_CHECK(nullptr, ncclGroupEnd());
  const auto deadline = deadline_after(timeout_s);
  for (int rank = 0; rank < n; ++rank) {
    for (;;) {
      ncclResult_t state = ncclSuccess;
      TANDEM_NCCL_CHECK(comms[rank], ncclCommGetAsyncError(comms[rank], &state));
      if (state == ncclSuccess) break;
      if (state != ncclInProgress || std::chrono::steady_clock::now() > deadline) {
        const std::string reason = state != ncclInProgress ? std::string(ncclGetErrorString(state)) + " (" +
                                                                 ncclGetLastError(comms[rank]) + ")"
                                                           : "not ready within the timeout";
        for (ncclComm_t c : comms)
          if (c) ncclCommAbort(c);
        TANDEM_THROW("NCCL communicator for rank " + std::to_string(rank) + " failed to initialise: " + reason);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return comms;
}

}  // namespace tandem::bench
