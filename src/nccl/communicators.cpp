#include "tandem/communicators.h"

#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "tandem/cuda_check.h"
#include "tandem/deadline.h"
#include "tandem/error.h"
#include "tandem/nccl_check.h"
#include "tandem/nccl_config.h"

namespace tandem {
namespace {

// close_communicator() says why teardown is serialised per process.
std::mutex& teardown_mutex() {
  static std::mutex m;
  return m;
}

// A non-blocking communicator finalizes in the background; it may be destroyed only once that is
// done. Gives up (false: abort instead) after the timeout rather than hang at exit.
bool finalize(ncclComm_t c, double timeout_s) noexcept {
  const ncclResult_t started = ncclCommFinalize(c);
  if (started != ncclSuccess && started != ncclInProgress) return false;
  const Deadline deadline = deadline_after(timeout_s);
  for (;;) {
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(c, &state) != ncclSuccess) return false;
    if (state == ncclSuccess) return true;
    if (state != ncclInProgress || std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace

void close_communicator(ncclComm_t c, bool healthy, double timeout_s) noexcept {
  if (!c) return;
  const bool destroy = healthy && finalize(c, timeout_s);
  const std::lock_guard<std::mutex> lock(teardown_mutex());
  if (destroy)
    ncclCommDestroy(c);
  else
    ncclCommAbort(c);
}

void abort_communicator(ncclComm_t c) noexcept {
  if (!c) return;
  const std::lock_guard<std::mutex> lock(teardown_mutex());
  ncclCommAbort(c);
}

PolicyCommunicators::PolicyCommunicators(ncclComm_t parent, WaitRules rules, std::optional<ncclConfig_t> base)
    : parent_(parent), rules_(std::move(rules)) {
  TANDEM_REQUIRE(parent_ != nullptr, "policy communicators need a parent communicator");
  const ncclConfig_t defaults = NCCL_CONFIG_INITIALIZER;
  base_ = base.value_or(defaults);
  TANDEM_NCCL_CHECK(parent_, ncclCommUserRank(parent_, &rank_));
  TANDEM_NCCL_CHECK(parent_, ncclCommCount(parent_, &nranks_));
}

PolicyCommunicators::~PolicyCommunicators() { close(std::uncaught_exceptions() == 0); }

ncclConfig_t PolicyCommunicators::config_for(const OverlapPolicy& policy) const {
  ncclConfig_t config = base_;
  // Non-blocking: no NCCL call may wait on the host for a peer that never comes; the waits poll.
  config.blocking = 0;
  apply_nccl_settings(policy, config);
  return config;
}

ncclComm_t PolicyCommunicators::communicator_for(const OverlapPolicy& policy) {
  if (uses_default_nccl_settings(policy)) return parent_;
  const std::string key = nccl_settings_key(policy);
  for (const auto& entry : owned_)
    if (entry.first == key) return entry.second;
  TANDEM_REQUIRE(!aborted_, (rules_.who.empty() ? "" : rules_.who + ": ") + "communicators already aborted");
  const std::string what = "communicator for " + to_string(policy);
  const ncclComm_t created = split_communicator(parent_, rank_, config_for(policy), rules_, what);
  owned_.emplace_back(key, created);
  return created;
}

ncclComm_t split_communicator(ncclComm_t parent, int rank, ncclConfig_t config, const WaitRules& rules,
                              const std::string& what) {
  config.blocking = 0;  // the waits poll, under `rules`
  // With a non-blocking parent NCCL runs the split in the background and writes the new
  // communicator into *newcomm only once the split is complete (it stays NULL until then: NCCL
  // init.cc), from its own thread. So the slot lives on the heap, the parent is awaited before the
  // slot is read, and if that wait fails the slot is left to NCCL (a few bytes leaked) rather than
  // freed under a write that may still come.
  auto slot = std::make_unique<ncclComm_t>(nullptr);
  // Color 0 on every rank: one communicator of all the parent's ranks; key = rank keeps their order.
  TANDEM_NCCL_CHECK(parent, ncclCommSplit(parent, 0, rank, slot.get(), &config));
  try {
    await_communicator(parent, rules, what + " (split from its parent)");
  } catch (...) {
    slot.release();
    throw;
  }
  const ncclComm_t created = *slot;
  TANDEM_REQUIRE(created != nullptr, "ncclCommSplit gave no " + what);
  try {
    await_communicator(created, rules, what);
  } catch (...) {
    abort_communicator(created);
    throw;
  }
  return created;
}

std::vector<ncclComm_t> PolicyCommunicators::owned() const {
  std::vector<ncclComm_t> out;
  for (const auto& entry : owned_) out.push_back(entry.second);
  return out;
}

// An unhealthy close aborts each communicator (close_communicator).
void PolicyCommunicators::abort() noexcept {
  close(false);
  aborted_ = true;
}

void PolicyCommunicators::close(bool healthy) noexcept {
  for (const auto& entry : owned_) close_communicator(entry.second, healthy && !aborted_, rules_.timeout_s);
  owned_.clear();
}

}  // namespace tandem
