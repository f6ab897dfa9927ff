#include "harness/microbenchmark.h"

#include <utility>

#include "report/report.h"

namespace tandem::bench {

Microbenchmark::Microbenchmark(std::string workload_name, Workload& workload, Collective kind, uint64_t bytes,
                               DType dtype, uint64_t seed, bool in_place)
    : workload_name_(std::move(workload_name)),
      workload_(workload),
      kind_(kind),
      bytes_(bytes),
      dtype_(dtype),
      seed_(seed),
      in_place_(in_place) {}

std::string Microbenchmark::label() const { return workload_name_ + " " + to_string(kind_) + " " + size_text(bytes_); }

void Microbenchmark::setup(RankContext& ctx) {
  nranks_ = ctx.nranks;
  collective_ = std::make_unique<CheckedCollective>();
  collective_->setup(ctx, kind_, bytes_, dtype_, seed_, in_place_);
  build();
}

bool Microbenchmark::set_collective_bytes(RankContext& ctx, uint64_t bytes) {
  bytes_ = bytes;
  setup(ctx);
  return true;
}

bool Microbenchmark::set_compute_count(int count) {
  count_ = count;
  build();
  return true;
}

void Microbenchmark::build() {
  program_ = std::make_unique<Program>(nranks_);
  for (int i = 1; i <= count_; ++i) {
    Op unit;
    unit.kind = Op::Kind::Compute;
    unit.name = workload_name_ + " " + std::to_string(i);
    // No access: the workload's buffers are its own, so no unit and the collective wait for each
    // other; every unit moves the workload's bytes.
    unit.enqueue = [this](cudaStream_t s) { workload_.enqueue(s); };
    unit.hbm_bytes = workload_.hbm_bytes();
    program_->add(std::move(unit));
  }
  Op collective;
  collective.kind = Op::Kind::Collective;
  collective.name = std::string(to_string(kind_)) + " " + size_text(bytes_);
  collective.call = collective_->call();
  program_->add(std::move(collective));
  program_->finalize();
}

std::vector<ShapedKernel*> Microbenchmark::shaped_kernels() {
  if (ShapedKernel* kernel = workload_.shaped_kernel()) return {kernel};
  return {};
}

void Microbenchmark::poison_outputs(cudaStream_t stream) {
  workload_.poison_output(stream);
  collective_->poison_output(stream);
}

int64_t Microbenchmark::count_wrong(RankContext& ctx) {
  return workload_.count_wrong(ctx) + collective_->count_wrong(ctx);
}

}  // namespace tandem::bench
