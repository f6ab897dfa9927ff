#include "tandem/nccl_wait.h"

#include <chrono>
#include <thread>

#include "tandem/cuda_check.h"
#include "tandem/deadline.h"
#include "tandem/error.h"

namespace tandem {
namespace {

using Clock = std::chrono::steady_clock;

std::string prefix(const WaitRules& rules) { return rules.who.empty() ? "" : rules.who + ": "; }

[[noreturn]] void fail(const WaitRules& rules, const std::string& message) {
  if (rules.on_failure) rules.on_failure();
  TANDEM_THROW(prefix(rules) + message);
}

// The caller's check (a failed peer), then the deadline.
void check_hooks_and_deadline(const WaitRules& rules, Deadline deadline, const std::string& step) {
  if (rules.each_poll) {
    try {
      rules.each_poll();
    } catch (...) {
      if (rules.on_failure) rules.on_failure();
      throw;
    }
  }
  if (Clock::now() > deadline) {
    const std::string setting = rules.timeout_setting.empty() ? "" : " (" + rules.timeout_setting + ")";
    fail(rules,
         "'" + step + "' did not finish within " + std::to_string(static_cast<int>(rules.timeout_s)) + " s" + setting);
  }
}

}  // namespace

void throw_if_communicator_failed(ncclComm_t c, const WaitRules& rules, const std::string& step) {
  ncclResult_t async = ncclSuccess;
  const ncclResult_t queried = ncclCommGetAsyncError(c, &async);
  if (queried != ncclSuccess) async = queried;
  if (async == ncclSuccess || async == ncclInProgress) return;
  const std::string reason = std::string(ncclGetErrorString(async)) + " (" + ncclGetLastError(c) + ")";
  fail(rules, "NCCL error during '" + step + "': " + reason);
}

void await_communicator(ncclComm_t c, const WaitRules& rules, const std::string& step) {
  TANDEM_REQUIRE(c != nullptr, prefix(rules) + "no communicator to await for '" + step + "'");
  const auto deadline = deadline_after(rules.timeout_s);
  for (;;) {
    ncclResult_t async = ncclSuccess;
    const ncclResult_t queried = ncclCommGetAsyncError(c, &async);
    if (queried == ncclSuccess && async == ncclSuccess) return;
    throw_if_communicator_failed(c, rules, step);
    check_hooks_and_deadline(rules, deadline, step);
    // Connection setup finishes in NCCL's own threads within microseconds to milliseconds: yielding
    // rather than sleeping keeps the first collective on a communicator from paying a sleep.
    std::this_thread::yield();
  }
}

void await_stream(cudaStream_t stream, const std::vector<ncclComm_t>& watched, const WaitRules& rules,
                  const std::string& step) {
  const auto deadline = deadline_after(rules.timeout_s);
  for (;;) {
    const cudaError_t status = cudaStreamQuery(stream);
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) {
      if (rules.on_failure) rules.on_failure();
      TANDEM_CUDA_CHECK(status);
    }
    for (ncclComm_t c : watched) throw_if_communicator_failed(c, rules, step);
    check_hooks_and_deadline(rules, deadline, step);
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace tandem
