#include "ranks/rank_group.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "tandem/error.h"

namespace tandem::bench {

RankGroup::RankGroup(int nranks) : nranks_(nranks) {}

void RankGroup::run(const std::function<void(int rank)>& body) {
  std::vector<std::thread> threads;
  threads.reserve(nranks_);
  for (int rank = 0; rank < nranks_; ++rank) {
    threads.emplace_back([this, rank, &body] {
      try {
        body(rank);
      } catch (...) {
        fail(std::current_exception());
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first_error_) std::rethrow_exception(first_error_);
}

void RankGroup::barrier() {
  std::unique_lock<std::mutex> lock(mutex_);
  throw_if_failed();
  const unsigned long my_generation = generation_;
  if (++arrived_ == nranks_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  cv_.wait(lock, [&] { return generation_ != my_generation || failed(); });
  throw_if_failed();
}

void RankGroup::share_from_rank0(int rank, void* data, size_t bytes) {
  if (rank == 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto* p = static_cast<const unsigned char*>(data);
    shared_.assign(p, p + bytes);
  }
  barrier();
  if (rank != 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    TANDEM_REQUIRE(shared_.size() == bytes, "ranks shared values of different sizes");
    std::copy(shared_.begin(), shared_.end(), static_cast<unsigned char*>(data));
  }
  barrier();  // rank 0 may not overwrite the shared value before everyone has read it
}

std::vector<std::string> RankGroup::all_gather(int rank, const std::string& mine) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (gathered_.size() != static_cast<size_t>(nranks_)) gathered_.resize(nranks_);
    gathered_[rank] = mine;
  }
  barrier();
  std::vector<std::string> out;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    out = gathered_;
  }
  barrier();  // nobody overwrites a slot before everyone has read them all
  return out;
}

void RankGroup::fail(std::exception_ptr reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!first_error_) first_error_ = reason;
    failed_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

void RankGroup::throw_if_failed() const {
  if (failed()) TANDEM_THROW("aborted: another rank failed");
}

}  // namespace tandem::bench
