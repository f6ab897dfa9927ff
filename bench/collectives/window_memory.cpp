#include "collectives/window_memory.h"

#include <algorithm>

#include "tandem/cuda_check.h"
#include "tandem/error.h"
#include "tandem/nccl_check.h"

namespace tandem::bench {

std::vector<ByteRange> collective_ranges(const CaseCollectives& collectives) {
  std::vector<ByteRange> ranges;
  for (const auto& [name, call] : collectives.calls) {
    const int64_t elem = static_cast<int64_t>(dtype_size(call.dtype));
    ranges.push_back({call.send, call.send_elements(collectives.nranks) * elem});
    ranges.push_back({call.recv, call.recv_elements(collectives.nranks) * elem});
  }
  return ranges;
}

std::string copy_engine_refusal(const CaseCollectives& collectives) {
  if (collectives.calls.empty()) return "the case issues no collective";
  for (const auto& [name, call] : collectives.calls) {
    // The library's windowed rule, which is its route's rule (tandem/copy_engine.h).
    const std::string why = tandem::copy_engine_refusal(call.copy_engine_call(), collectives.nranks);
    if (!why.empty()) return name + ": " + why;
  }
  return "";
}

int64_t copy_engine_scratch_bytes(const CaseCollectives& collectives) {
  int64_t bytes = 0;
  for (const auto& [name, call] : collectives.calls)
    bytes = std::max(bytes, int64_t(tandem::copy_engine_scratch_bytes(call.copy_engine_call(), collectives.nranks)));
  return bytes;
}

WindowMemory::~WindowMemory() {
  if (windows_ && windows_->holds_registrations()) {
    windows_->abandon();
    return;
  }
  for (const auto& a : allocations_) ncclMemFree(const_cast<void*>(a.ptr));
  if (scratch_) ncclMemFree(scratch_);
}

void* WindowMemory::allocate(size_t bytes) {
  void* p = nullptr;
  TANDEM_NCCL_CHECK(nullptr, ncclMemAlloc(&p, bytes));
  allocations_.push_back({p, int64_t(bytes)});
  return p;
}

std::string WindowMemory::register_windows(const CaseCollectives& collectives, ncclComm_t comm,
                                           const CopyEngineLanes* lanes, const WaitRules& rules,
                                           const std::string& what, CollectiveIssue& issue) {
  TANDEM_REQUIRE(!lanes || (!lanes->comms().empty() && lanes->comms().front() == comm),
                 what + ": copy-engine lane 0 must be the policy's communicator");
  // Decided from the case's collectives alone, so every rank returns the same answer and either all
  // register or none does.
  if (lanes) {
    const std::string why = copy_engine_refusal(collectives);
    if (!why.empty()) return why;
  }
  // Copy-engine reductions stage every rank's chunks in one scratch buffer, registered with the rest.
  const int64_t scratch_bytes = lanes ? copy_engine_scratch_bytes(collectives) : 0;
  if (scratch_bytes > 0 && !scratch_) {
    TANDEM_NCCL_CHECK(nullptr, ncclMemAlloc(&scratch_, size_t(scratch_bytes)));
    scratch_bytes_ = scratch_bytes;
  }
  issue = CollectiveIssue{};
  issue.all_to_all_api = true;
  issue.lanes = lanes;
  issue.copy_engine_scratch = scratch_bytes > 0 ? scratch_ : nullptr;
  if (!windows_) windows_ = std::make_unique<SymmetricWindows>(rules);
  if (windows_->registered_on(comm)) return "";

  // Whole allocations, each once, in order of first use by a collective in program order. A
  // collective's pointer may sit at an offset inside its window (a bucket, a slice); the offset is
  // the same on every rank, which is what NCCL_WIN_COLL_SYMMETRIC asks of the caller.
  std::vector<ByteRange> to_register;
  for (size_t i : containing_allocations(allocations_, collective_ranges(collectives)))
    to_register.push_back(allocations_[i]);
  if (scratch_bytes > 0) to_register.push_back({scratch_, scratch_bytes_});
  // Each lane's gathers reach the same buffers through its own communicator's windows. Lanes are
  // per policy settings, so none of them has windows yet when `comm` has none.
  for (ncclComm_t c : lanes ? lanes->comms() : std::vector<ncclComm_t>{comm}) windows_->add(c, to_register, what);
  return "";
}

std::vector<ncclComm_t> WindowMemory::communicators() const {
  return windows_ ? windows_->communicators() : std::vector<ncclComm_t>{};
}

void WindowMemory::release(const std::string& what) {
  if (windows_) windows_->release(what);
}

}  // namespace tandem::bench
