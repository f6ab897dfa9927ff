#pragma once
// What ranks need from each other while measuring: meet (barrier), learn rank 0's value, and see
// every rank's values, so that every rank computes the same aggregates and takes the same decisions.
// Two implementations with the same meaning: ranks as threads of one process (shared memory and a
// condition variable, ranks/rank_group.h) and ranks as processes (an NCCL control communicator,
// ranks/control_channel.h). The runners use only this interface, so one runner serves both.
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

namespace tandem::bench {

class ControlChannel;
class RankGroup;

class Coordinator {
 public:
  virtual ~Coordinator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Returns once every rank has called it. Throws when the run has failed, or (processes) after the
  // time-out.
  virtual void barrier() = 0;
  // Rank 0's `bytes` bytes at `data` overwrite every other rank's (all ranks call it).
  virtual void broadcast_from_rank0(void* data, size_t bytes) = 0;
  // Every rank's bytes, by rank (all ranks call it).
  virtual std::vector<std::string> all_gather(const std::string& mine) = 0;
  // Marks the run failed (first reason wins): in-process ranks stop waiting, and communicators are
  // aborted rather than finalised, which would wait for peers that may never come.
  virtual void fail(std::exception_ptr reason) = 0;
  virtual bool failed() const = 0;
  // Throws a short "aborted: another rank failed" error when the run has failed.
  void throw_if_failed() const;

  // On top of all_gather: each rank's vector, by rank; several series in one exchange ([rank][series]);
  // the sum; the minimum. (The benchmark's slowest-rank summaries build on all_gather_series:
  // harness/slowest_rank.h.)
  std::vector<std::vector<double>> all_gather(const std::vector<double>& mine);
  std::vector<std::vector<std::vector<double>>> all_gather_series(const std::vector<std::vector<double>>& mine);
  int64_t sum(int64_t mine);
  double min(double mine);
};

// One rank of a RankGroup (threads of one process).
class ThreadCoordinator final : public Coordinator {
 public:
  ThreadCoordinator(RankGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override;
  void barrier() override;
  void broadcast_from_rank0(void* data, size_t bytes) override;
  std::vector<std::string> all_gather(const std::string& mine) override;
  using Coordinator::all_gather;
  void fail(std::exception_ptr reason) override;
  bool failed() const override;

 private:
  RankGroup& group_;
  int rank_;
};

// This process's rank among ranks in separate processes.
class ProcessCoordinator final : public Coordinator {
 public:
  explicit ProcessCoordinator(ControlChannel& channel) : channel_(channel) {}
  int rank() const override;
  int size() const override;
  void barrier() override;
  void broadcast_from_rank0(void* data, size_t bytes) override;
  std::vector<std::string> all_gather(const std::string& mine) override;
  using Coordinator::all_gather;
  // Another process's failure is not visible here: it shows as an NCCL error or a time-out.
  void fail(std::exception_ptr reason) override;
  bool failed() const override { return failed_; }

 private:
  ControlChannel& channel_;
  bool failed_ = false;
};

}  // namespace tandem::bench
