// Megatron tensor-parallel attention: QKV column-parallel (heads split across ranks), the attention
// core stand-in on the local heads, O row-parallel, then an all-reduce (or, with
// --sequence-parallel, all-gather before and reduce-scatter after), forward and backward,
// micro-batches interleaved so one's GEMMs overlap another's collective.
#include "scenarios/tensor_parallel.h"

namespace tandem::bench::scenarios {

std::unique_ptr<Scenario> make_tp_attention(const ScenarioConfig& c) {
  return std::make_unique<TensorParallel>(c, /*attention=*/true);
}

}  // namespace tandem::bench::scenarios
