#include <exception>
#include <utility>

#include "tandem/communicators.h"
#include "tandem/copy_engine.h"
#include "tandem/cuda_check.h"
#include "tandem/error.h"

namespace tandem {

CopyEngineLanes::CopyEngineLanes(ncclComm_t lane0, const ncclConfig_t& config, WaitRules rules)
    : rules_(std::move(rules)) {
  TANDEM_REQUIRE(lane0 != nullptr, "copy-engine lanes need a communicator");
  TANDEM_NCCL_CHECK(lane0, ncclCommUserRank(lane0, &rank_));
  TANDEM_NCCL_CHECK(lane0, ncclCommCount(lane0, &nranks_));
  comms_.push_back(lane0);
  try {
    const StreamPriorityRange range = stream_priority_range();
    for (int lane = 1; lane < nranks_; ++lane) {
      comms_.push_back(split_communicator(lane0, rank_, config, rules_, "copy-engine lane " + std::to_string(lane)));
      high_.emplace_back(range.greatest);
      low_.emplace_back(range.least);
      cudaEvent_t join = nullptr;
      TANDEM_CUDA_CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
      joins_.push_back(join);
    }
    TANDEM_CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
  } catch (...) {
    // No destructor runs for a constructor that throws: the lanes split so far go here, aborted (the
    // peers may never get this far).
    abort();
    release_events();
    throw;
  }
}

CopyEngineLanes::~CopyEngineLanes() {
  close(std::uncaught_exceptions() == 0);
  release_events();
}

void CopyEngineLanes::release_events() noexcept {
  if (fork_) cudaEventDestroy(fork_);
  fork_ = nullptr;
  for (cudaEvent_t e : joins_) cudaEventDestroy(e);
  joins_.clear();
}

// An unhealthy close aborts each lane (close_communicator).
void CopyEngineLanes::abort() noexcept { close(false); }

void CopyEngineLanes::close(bool healthy) noexcept {
  for (size_t lane = 1; lane < comms_.size(); ++lane)
    close_communicator(comms_[lane], healthy && usable_, rules_.timeout_s);
  if (!comms_.empty()) comms_.resize(1);
  usable_ = false;
}

}  // namespace tandem
