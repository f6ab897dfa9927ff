#pragma once
// A microbenchmark case: `count` units of a compute workload (harness/workload.h) and one
// collective (harness/checked_collective.h) at one size, with no dependency between them, as one
// program: count compute operations, then the collective. The runner chooses the count so that the
// compute takes as long as the collective (--balance), and may resize the collective to match
// (--balance-size).
#include <memory>
#include <string>

#include "harness/case.h"
#include "harness/checked_collective.h"
#include "harness/workload.h"

namespace tandem::bench {

class Microbenchmark final : public Case {
 public:
  // `workload` is set up already and shared by the cases of every collective and size.
  Microbenchmark(std::string workload_name, Workload& workload, Collective kind, uint64_t bytes, DType dtype,
                 uint64_t seed, bool in_place);

  std::string workload() const override { return workload_name_; }
  std::string label() const override;
  void setup(RankContext& ctx) override;
  const Program& program() const override { return *program_; }
  int count() const override { return count_; }
  bool set_compute_count(int count) override;
  // New buffers, a new program.
  bool set_collective_bytes(RankContext& ctx, uint64_t bytes) override;
  // NCCL's own all-to-all rather than grouped point-to-point: the collective nccl-tests time.
  CollectiveIssue default_issue() const override { return {/*all_to_all_api=*/true}; }
  WindowMemory& window_memory() override { return collective_->window_memory(); }
  std::vector<ShapedKernel*> shaped_kernels() override;
  std::string not_shapeable_reason() const override { return workload_.not_shapeable_reason(); }
  bool set_sm_count_target(int sm_count) override { return workload_.set_sm_count_target(sm_count); }
  void poison_outputs(cudaStream_t stream) override;
  int64_t count_wrong(RankContext& ctx) override;

 private:
  void build();

  std::string workload_name_;
  Workload& workload_;
  Collective kind_;
  uint64_t bytes_;
  DType dtype_;
  uint64_t seed_;
  bool in_place_;
  int nranks_ = 1;
  int count_ = 1;
  std::unique_ptr<CheckedCollective> collective_;
  std::unique_ptr<Program> program_;
};

}  // namespace tandem::bench
