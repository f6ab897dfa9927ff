#pragma once
// One host thread per GPU, with a barrier that cannot deadlock: when any rank fails, every other
// rank is released from the barrier (and from its polling waits) with an error, so one bad rank
// ends the run instead of hanging it.
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace tandem::bench {

class RankGroup {
 public:
  explicit RankGroup(int nranks);

  // Runs body(rank) on one thread per rank and waits for all. If any rank throws, the group is
  // marked failed and the first error is rethrown here, on the calling thread.
  void run(const std::function<void(int rank)>& body);

  // Waits until every rank arrives; throws if the group has failed meanwhile.
  void barrier();
  // Rank 0's `bytes` at `data` are copied into every other rank's `data` (all ranks call it).
  void share_from_rank0(int rank, void* data, size_t bytes);
  // Every rank's `mine`, by rank (all ranks call it).
  std::vector<std::string> all_gather(int rank, const std::string& mine);
  // Marks the group failed (first reason wins) and wakes everyone.
  void fail(std::exception_ptr reason);
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // Throws a short "aborted: another rank failed" error when the group has failed.
  void throw_if_failed() const;
  int size() const { return nranks_; }

 private:
  int nranks_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  unsigned long generation_ = 0;
  std::atomic<bool> failed_{false};
  std::exception_ptr first_error_;
  std::vector<unsigned char> shared_;
  std::vector<std::string> gathered_;  // one slot per rank
};

}  // namespace tandem::bench
