#include "harness/registry.h"

#include "tandem/error.h"
#include "tandem/printable.h"

namespace tandem::bench {

// Each workload and scenario lives in its own file and exposes one factory.
std::unique_ptr<Workload> make_gemm_workload(const WorkloadOptions&);
std::unique_ptr<Workload> make_tiled_gemm_workload(const WorkloadOptions&);
std::unique_ptr<Workload> make_stream_workload(const WorkloadOptions&);
namespace scenarios {
std::unique_ptr<Scenario> make_dp_backward(const ScenarioConfig&);
std::unique_ptr<Scenario> make_tp_mlp(const ScenarioConfig&);
std::unique_ptr<Scenario> make_tp_attention(const ScenarioConfig&);
std::unique_ptr<Scenario> make_fsdp(const ScenarioConfig&);
std::unique_ptr<Scenario> make_moe(const ScenarioConfig&);
}  // namespace scenarios

const std::vector<WorkloadEntry>& workload_registry() {
  static const std::vector<WorkloadEntry> entries = {
      {"gemm", "cuBLASLt GEMM (persistent, one CTA per SM on Hopper)", make_gemm_workload},
      {"tiled-gemm", "tandem's SIMT tiled GEMM: many waves, several blocks per SM", make_tiled_gemm_workload},
      {"stream", "memory-bound STREAM triad a = b + s*c", make_stream_workload},
      {"dp-backward", "DDP backward over L layers, bucketed gradient all-reduce overlapping it", nullptr,
       scenarios::make_dp_backward},
      {"tp-mlp", "Megatron tensor-parallel MLP forward + backward, micro-batches interleaved", nullptr,
       scenarios::make_tp_mlp},
      {"tp-attention", "Megatron tensor-parallel attention forward + backward, micro-batches interleaved", nullptr,
       scenarios::make_tp_attention},
      {"fsdp", "FSDP forward + backward: next layer's all-gather overlaps this one, gradients reduce-scattered",
       nullptr, scenarios::make_fsdp},
      {"moe", "expert-parallel MoE forward + backward: all-to-all dispatch/combine around expert GEMMs", nullptr,
       scenarios::make_moe},
  };
  return entries;
}

const WorkloadEntry& find_workload(const std::string& name) {
  std::string accepted;
  for (const auto& e : workload_registry()) {
    if (name == e.name) return e;
    accepted += (accepted.empty() ? "" : ", ") + std::string(e.name);
  }
  TANDEM_USER_ERROR("unknown workload " + quoted_value(name) + "; accepted: " + accepted);
}

Collective find_collective(const std::string& name) {
  std::string accepted;
  for (Collective c : kBenchmarkCollectives) {
    if (name == to_string(c)) return c;
    accepted += (accepted.empty() ? "" : ", ") + std::string(to_string(c));
  }
  TANDEM_USER_ERROR("unknown collective " + quoted_value(name) + "; accepted: " + accepted);
}

}  // namespace tandem::bench
