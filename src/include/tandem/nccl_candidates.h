#pragma once
// The NCCL settings worth trying on top of a policy: NCCL's CTA count, cluster size and CTA policy.
// Shared by the two tunes: the benchmark's search measures them as one of its stages
// (bench/harness/tuner.h), and a program's tune tries them on top of `priority` among its default
// candidates (program_tools/program_tuner.h). Pure: a list of policies.
#include <vector>

#include "tandem/policy.h"

namespace tandem {

// `base` with at most 4, 8 or 16 NCCL CTAs, with cluster size 1, and with the efficiency CTA policy.
std::vector<OverlapPolicy> nccl_candidates(const OverlapPolicy& base);

}  // namespace tandem
