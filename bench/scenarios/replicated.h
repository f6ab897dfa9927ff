#pragma once
// The common machinery of the scenarios. A scenario is one function, build(Replica&), that
// allocates and fills one rank's buffers and emits its iteration (GEMMs, element-wise kernels,
// collectives) in program order. setup() calls it once for this rank (cuBLASLt GEMMs: what is
// timed) and once per rank on replicas held on this device (naive reference GEMMs), runs the
// replicas in lockstep with collectives computed by copies and fp32 sums (run_lockstep), and keeps
// this rank's reference outputs. Checked runs compare against those under every policy.
#include <memory>
#include <string>
#include <vector>

#include "harness/program.h"
#include "harness/scenario.h"
#include "scenarios/gemm_op.h"
#include "scenarios/kernels.h"

namespace tandem::bench::scenarios {

// One rank's buffers and program. Operations append to the program, or, between
// begin_interleave() and end_interleave(), to one of several chains (micro-batches) that are then
// merged block by block - a block ends after each collective - so that the next micro-batch's
// compute is enqueued while the current micro-batch's collective runs.
class Replica {
 public:
  // Where buffers come from: the rank's own replica (timed with NCCL) takes them from `memory`
  // (ncclMemAlloc, which NCCL can register as windows); reference replicas (nullptr) never meet
  // NCCL and take cudaMalloc's, which they free.
  Replica(RankContext& ctx, int rank, const ScenarioConfig& config, GemmEngine& gemms, const Elementwise& kernels,
          WindowMemory* memory = nullptr);
  ~Replica();
  Replica(const Replica&) = delete;
  Replica& operator=(const Replica&) = delete;

  int rank() const { return rank_; }
  int nranks() const { return config_.nranks; }
  DType dtype() const { return config_.dtype; }
  const ScenarioOptions& options() const { return config_.options; }

  // Zero-filled device buffer of `elements` of the scenario's dtype.
  void* zeros(int64_t elements);
  // Uniform values in [lo, hi): inputs, weights, saved activations.
  void* random(int64_t elements, uint64_t tag, float lo = -1.0f, float hi = 1.0f);
  // The same values written into existing memory (e.g. a chunk of a gathered buffer).
  void randomize(void* p, int64_t elements, uint64_t tag, float lo = -1.0f, float hi = 1.0f);
  int32_t* upload(const std::vector<int32_t>& values);
  // `base` advanced by `elements` of the dtype.
  void* at(const void* base, int64_t elements) const;
  int64_t allocated_bytes() const { return allocated_bytes_; }
  // A value-stream tag from a name, a layer, a micro-batch and (per_rank) this rank: the reference
  // replica of rank r draws exactly what rank r draws.
  uint64_t tag(const std::string& what, int layer = -1, int micro = -1, bool per_rank = true) const;

  // C = sqrt(3/k) op(A) op(B) (+ C when accumulate): the scale keeps uniform [-1, 1) data at
  // variance 1/3 through any chain of GEMMs, as 1/sqrt(fan-in) initialisation would.
  void gemm(const GemmDims& dims, const void* a, const void* b, void* c, bool accumulate = false);
  void add(const std::string& name, void* out, const void* a, const void* b, int64_t n);
  void swiglu(const std::string& name, void* h, const void* g, int64_t rows, int64_t f);
  void swiglu_backward(const std::string& name, void* dg, const void* g, const void* dh, int64_t rows, int64_t f);
  void attention(const std::string& name, void* a, const void* qkv, int64_t rows, const AttentionDims& d);
  void attention_backward(const std::string& name, void* dqkv, const void* qkv, const void* da, int64_t rows,
                          const AttentionDims& d);
  // out[q] = scale[q] * in[row_of[q]], q < rows; `in` has in_rows rows.
  void gather_rows(const std::string& name, void* out, const void* in, int64_t in_rows, const int32_t* row_of,
                   const void* scale, int64_t rows, int64_t width);
  // out[t] = residual[t] + sum_j scale[s] in[s], s = slots[t k + j]; `in` has in_rows rows.
  void combine_rows(const std::string& name, void* out, const void* residual, const void* in, int64_t in_rows,
                    const int32_t* slots, const void* scale, int64_t rows, int k, int64_t width);
  void swap_blocks(const std::string& name, void* out, const void* in, int64_t outer, int64_t inner, int64_t block);
  void collective(const std::string& name, Collective kind, const void* send, void* recv, int64_t count);

  void begin_interleave(int chains);
  void select_chain(int chain);
  void end_interleave();

  // A checked output: poisoned before checked runs, compared with the reference after.
  void output(const std::string& name, const void* ptr, int64_t elements);
  struct Output {
    std::string name;
    const void* ptr;
    int64_t elements;
  };
  const std::vector<Output>& outputs() const { return outputs_; }
  // Element-wise kernels this program launches, in order of first use.
  const std::vector<ShapedKernel*>& used_kernels() const { return used_kernels_; }

  void finalize();
  const Program& program() const { return program_; }

 private:
  void* allocate(size_t bytes);
  void append(Op op);
  void compute(const std::string& name, std::vector<Access> access, std::function<void(cudaStream_t)> fn,
               ShapedKernel* kernel);
  // One of the element-wise kernels: `fn` launches it through the scenario's Elementwise.
  void elementwise(const std::string& name, std::vector<Access> access, Elementwise::Kernel kernel,
                   std::function<void(const Elementwise&, cudaStream_t)> fn);
  Access reads(const void* p, int64_t elements) const { return {p, elements * elem_, false}; }
  Access writes(const void* p, int64_t elements) const { return {p, elements * elem_, true}; }

  RankContext& ctx_;
  int rank_;
  ScenarioConfig config_;
  GemmEngine& gemms_;
  const Elementwise& kernels_;
  int64_t elem_;
  WindowMemory* memory_;
  std::vector<void*> device_buffers_;  // cudaMalloc's, freed with the replica
  int64_t allocated_bytes_ = 0;
  Program program_;
  std::vector<std::vector<std::vector<Op>>> chains_;  // chain -> blocks -> ops
  int current_chain_ = -1;
  std::vector<Output> outputs_;
  std::vector<ShapedKernel*> used_kernels_;
};

class ReplicatedScenario : public Scenario {
 public:
  explicit ReplicatedScenario(const ScenarioConfig& config);
  ~ReplicatedScenario() override;

  void setup(RankContext& ctx) override;
  const Program& program() const override { return own_->program(); }
  WindowMemory& window_memory() override { return memory_; }
  bool set_sm_count_target(int sm_count) override { return gemms_->set_sm_count_target(sm_count); }
  std::vector<ShapedKernel*> shaped_kernels() override { return own_->used_kernels(); }
  void poison_outputs(cudaStream_t stream) override;
  int64_t count_wrong(RankContext& ctx) override;
  // Set by setup() when the reference had to use cuBLASLt for GEMMs too large for the naive kernel.
  std::string setup_note() const override { return setup_note_; }

 protected:
  virtual void build(Replica& r) const = 0;
  const ScenarioConfig& config() const { return config_; }
  std::string dtype_text() const { return to_string(config_.dtype); }

 private:
  struct Expected {
    std::string name;
    const void* got;
    int64_t elements;
    float* ref;
    float atol;
  };
  void compute_reference(RankContext& ctx);

  ScenarioConfig config_;
  WindowMemory memory_;  // this rank's buffers: outlives own_
  std::unique_ptr<Elementwise> kernels_;
  std::unique_ptr<GemmEngine> gemms_;
  std::unique_ptr<Replica> own_;
  std::vector<Expected> expected_;
  unsigned long long* wrong_ = nullptr;
  float rtol_ = 0;
  float rms_fraction_ = 0;  // absolute tolerance, as a fraction of the output's RMS
  std::string setup_note_;
};

}  // namespace tandem::bench::scenarios
