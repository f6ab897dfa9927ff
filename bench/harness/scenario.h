#pragma once
// Training scenarios: what a framework issues in one iteration (GEMMs, element-wise kernels and
// collectives with their real data dependencies). Scenarios live in bench/scenarios/, one per file,
// one registry line each (harness/registry.cpp); docs/WORKLOADS.md describes them.
#include <cstdint>
#include <memory>
#include <string>

#include "harness/case.h"
#include "tandem/dtype.h"

namespace tandem::bench {

// Model and schedule of the scenarios (`tandem bench --hidden ... --layers ...`). Defaults are
// Llama-like (hidden 4096, sequence 4096, bf16) and sized so that every scenario runs well under a
// second per iteration on an H200 and fits in memory on 2 GPUs.
struct ScenarioOptions {
  int64_t hidden = 4096;
  int64_t seq = 4096;  // tokens per micro-batch on each rank (sequence length x micro-batch size 1)
  int layers = 4;
  int64_t ffn = 0;                 // 0: 3.5 x hidden rounded up to 128 (Llama 3: 14336 for 4096)
  int heads = 0;                   // 0: hidden / 128
  int kv_heads = 0;                // 0: min(8, heads)
  double bucket_mb = 25;           // DDP bucket_cap_mb (MiB)
  double first_bucket_mb = 1;      // DDP's first bucket (dist._DEFAULT_FIRST_BUCKET_BYTES)
  int micro_batches = 2;           // tp-mlp, tp-attention, moe
  bool sequence_parallel = false;  // tp-*: reduce-scatter + all-gather instead of all-reduce
  int experts = 8;                 // moe: experts in total, spread over the ranks
  int top_k = 2;                   // moe: experts per token
  int64_t expert_ffn = 0;          // moe: expert MLP width; 0: ffn
};

// A training scenario: one case (harness/case.h) whose program is what a framework issues in one
// iteration. Its collectives are its own, fixed by the model.
class Scenario : public Case {
 public:
  virtual std::string name() const = 0;
  // One line for the output header: model, schedule, sizes, reference.
  virtual std::string describe() const = 0;
  // The collectives it issues, joined by '+' in order of first use ("all-reduce",
  // "all-gather+reduce-scatter"), known before setup(); setup() checks the program issues them.
  virtual std::string collective() const = 0;
  std::string workload() const override { return name(); }
  std::string label() const override { return name(); }
  std::string not_shapeable_reason() const override {
    return "the scenario's kernels all belong to libraries (cuBLASLt, NCCL)";
  }
};

// What a scenario is built from; no GPU is touched until setup().
struct ScenarioConfig {
  ScenarioOptions options;
  DType dtype = DType::BF16;
  uint64_t seed = 0x7a4d3e;
  int nranks = 1;
  bool in_place = false;  // --in-place: all-gather inputs in their chunk of the output (tp-* with SP)
};

using ScenarioFactory = std::unique_ptr<Scenario> (*)(const ScenarioConfig&);

}  // namespace tandem::bench
