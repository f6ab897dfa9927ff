// The training scenarios `tandem bench --workload` accepts besides the microbenchmark workloads.
// Each lives in its own file and exposes one factory.
#include "harness/scenario.h"

namespace tandem::bench {

namespace scenarios {
std::unique_ptr<Scenario> make_dp_backward(const ScenarioConfig&);
std::unique_ptr<Scenario> make_tp_mlp(const ScenarioConfig&);
std::unique_ptr<Scenario> make_tp_attention(const ScenarioConfig&);
std::unique_ptr<Scenario> make_fsdp(const ScenarioConfig&);
std::unique_ptr<Scenario> make_moe(const ScenarioConfig&);
}  // namespace scenarios

const std::vector<ScenarioEntry>& scenario_registry() {
  static const std::vector<ScenarioEntry> entries = {
      {"dp-backward", "DDP backward over L layers, bucketed gradient all-reduce overlapping it",
       scenarios::make_dp_backward},
      {"tp-mlp", "Megatron tensor-parallel MLP forward + backward, micro-batches interleaved", scenarios::make_tp_mlp},
      {"tp-attention", "Megatron tensor-parallel attention forward + backward, micro-batches interleaved",
       scenarios::make_tp_attention},
      {"fsdp", "FSDP forward + backward: next layer's all-gather overlaps this one, gradients reduce-scattered",
       scenarios::make_fsdp},
      {"moe", "expert-parallel MoE forward + backward: all-to-all dispatch/combine around expert GEMMs",
       scenarios::make_moe},
  };
  return entries;
}

}  // namespace tandem::bench
