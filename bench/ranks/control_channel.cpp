#include "ranks/control_channel.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>

#include "tandem/communicators.h"
#include "tandem/cuda_check.h"
#include "tandem/nccl_check.h"
#include "tandem/text.h"

namespace tandem::bench {

namespace {

// Short waits (a barrier between steps: tens of microseconds) spin; longer ones sleep so a rank
// waiting for a slow peer does not burn its core.
void pause(std::chrono::steady_clock::time_point started) {
  if (std::chrono::steady_clock::now() - started < std::chrono::milliseconds(2))
    std::this_thread::yield();
  else
    std::this_thread::sleep_for(std::chrono::microseconds(50));
}

}  // namespace

ControlChannel::ControlChannel(const ncclUniqueId& id, int rank, int nranks, double timeout_s, const std::string& hint)
    : rank_(rank), nranks_(nranks), timeout_s_(timeout_s) {
  try {
    join(id, hint);
  } catch (...) {
    abort();
    release();  // the destructor does not run for a constructor that throws
    throw;
  }
}

void ControlChannel::join(const ncclUniqueId& id, const std::string& hint) {
  TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  reserve(4096);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  // Non-blocking: initialisation waits for peers, and that wait is ours to bound.
  config.blocking = 0;
  // A few bytes per call: one channel is plenty and keeps NCCL's buffers for it small.
  config.minCTAs = 1;
  config.maxCTAs = 1;
  config.commName = "tandem-control";
  TANDEM_NCCL_CHECK(nullptr, ncclCommInitRankConfig(&comm_, nranks_, id, rank_, &config));
  try {
    await_communicator(comm_, rules(), "joining the other ranks");
  } catch (const Error& e) {
    // What the wait cannot know: why ranks fail to meet.
    TANDEM_THROW(e.message() +
                 "; a rank was not started, failed before joining, has another world size, or shares a GPU "
                 "with another (NCCL refuses that; NCCL_DEBUG=WARN names them)" +
                 hint);
  }
}

ControlChannel::~ControlChannel() {
  // After abort() there is nothing left to close; otherwise finalize, or abort after the time-out
  // rather than hang at exit.
  close_communicator(comm_, /*healthy=*/true, timeout_s_);
  release();
}

void ControlChannel::release() noexcept {
  if (device_) cudaFree(device_);
  if (host_) cudaFreeHost(host_);
  if (stream_) cudaStreamDestroy(stream_);
  device_ = nullptr;
  host_ = nullptr;
  stream_ = nullptr;
  capacity_ = 0;
}

void ControlChannel::abort() noexcept {
  if (aborted_ || !comm_) return;
  // Aborting makes this rank's NCCL kernels exit, so its stream drains.
  abort_communicator(comm_);
  comm_ = nullptr;
  aborted_ = true;
}

WaitRules ControlChannel::rules() {
  WaitRules r;
  r.timeout_s = timeout_s_;
  r.who = "rank " + std::to_string(rank_) + ": control";
  r.timeout_setting = "--timeout";
  r.on_failure = [this] { abort(); };
  return r;
}

void ControlChannel::fail(const std::string& step, const std::string& why) {
  abort();
  TANDEM_THROW("rank " + std::to_string(rank_) + ": control " + step + ": " + why);
}

void ControlChannel::throw_if_async_error(const std::string& step) {
  ncclResult_t state = ncclSuccess;
  if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) fail(step, "ncclCommGetAsyncError failed");
  if (state != ncclSuccess && state != ncclInProgress)
    fail(step, std::string(ncclGetErrorString(state)) + " (" + ncclGetLastError(comm_) + ")");
}

void ControlChannel::await_stream(const std::string& step, Deadline until) {
  const auto started = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t status = cudaStreamQuery(stream_);
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) {
      abort();
      TANDEM_CUDA_CHECK(status);
    }
    throw_if_async_error(step);
    if (std::chrono::steady_clock::now() > until)
      fail(step, "not every rank arrived within " + number(timeout_s_) +
                     " s (--timeout): another rank stopped or is stuck; its own error says why");
    pause(started);
  }
}

void ControlChannel::reserve(size_t bytes) {
  if (bytes <= capacity_) return;
  // Called only between collectives, with the stream drained: the old buffers are idle.
  const size_t capacity = std::max(bytes, 2 * capacity_);
  if (device_) TANDEM_CUDA_CHECK(cudaFree(device_));
  if (host_) TANDEM_CUDA_CHECK(cudaFreeHost(host_));
  device_ = nullptr;
  host_ = nullptr;
  capacity_ = 0;
  TANDEM_CUDA_CHECK(cudaMalloc(&device_, capacity));
  TANDEM_CUDA_CHECK(cudaMallocHost(&host_, capacity));
  capacity_ = capacity;
}

void ControlChannel::barrier(const std::string& step) {
  TANDEM_REQUIRE(!aborted_, "rank " + std::to_string(rank_) + ": control channel already aborted");
  const Deadline until = deadline_after(timeout_s_);
  // The buffer's value does not matter: only the collective's completion does.
  TANDEM_NCCL_CHECK(comm_, ncclAllReduce(device_, device_, 1, ncclInt32, ncclSum, comm_, stream_));
  await_communicator(comm_, rules(), step);
  await_stream(step, until);
}

void ControlChannel::broadcast(void* data, size_t bytes, const std::string& step) {
  TANDEM_REQUIRE(!aborted_, "rank " + std::to_string(rank_) + ": control channel already aborted");
  if (bytes == 0) return barrier(step);
  reserve(bytes);
  const Deadline until = deadline_after(timeout_s_);
  if (rank_ == 0) {
    std::memcpy(host_, data, bytes);
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(device_, host_, bytes, cudaMemcpyHostToDevice, stream_));
  }
  TANDEM_NCCL_CHECK(comm_, ncclBroadcast(device_, device_, bytes, ncclUint8, 0, comm_, stream_));
  await_communicator(comm_, rules(), step);
  TANDEM_CUDA_CHECK(cudaMemcpyAsync(host_, device_, bytes, cudaMemcpyDeviceToHost, stream_));
  await_stream(step, until);
  std::memcpy(data, host_, bytes);
}

void ControlChannel::gather_slots(size_t slot, const std::string& step, Deadline until) {
  char* device_bytes = static_cast<char*>(device_);
  TANDEM_CUDA_CHECK(
      cudaMemcpyAsync(device_bytes + rank_ * slot, host_ + rank_ * slot, slot, cudaMemcpyHostToDevice, stream_));
  TANDEM_NCCL_CHECK(comm_, ncclAllGather(device_bytes + rank_ * slot, device_bytes, slot, ncclUint8, comm_, stream_));
  await_communicator(comm_, rules(), step);
  TANDEM_CUDA_CHECK(cudaMemcpyAsync(host_, device_bytes, nranks_ * slot, cudaMemcpyDeviceToHost, stream_));
  await_stream(step, until);
}

std::vector<std::string> ControlChannel::all_gather(const std::string& mine, const std::string& step) {
  TANDEM_REQUIRE(!aborted_, "rank " + std::to_string(rank_) + ": control channel already aborted");
  const size_t n = static_cast<size_t>(nranks_);
  const Deadline until = deadline_after(timeout_s_);
  // Round 1: every rank's length.
  const uint64_t length = mine.size();
  reserve(n * sizeof(uint64_t));
  std::memcpy(host_ + rank_ * sizeof(uint64_t), &length, sizeof(uint64_t));
  gather_slots(sizeof(uint64_t), step, until);
  std::vector<uint64_t> sizes(n);
  std::memcpy(sizes.data(), host_, n * sizeof(uint64_t));
  const size_t slot = std::max<uint64_t>(1, *std::max_element(sizes.begin(), sizes.end()));

  // Round 2: the bytes, each rank's in a slot of the longest length.
  reserve(n * slot);
  std::memcpy(host_ + rank_ * slot, mine.data(), mine.size());
  gather_slots(slot, step, until);
  std::vector<std::string> out;
  for (size_t r = 0; r < n; ++r) out.emplace_back(host_ + r * slot, sizes[r]);
  return out;
}

}  // namespace tandem::bench
