#include "tandem/nccl_candidates.h"

namespace tandem {
namespace {

OverlapPolicy with(OverlapPolicy p, void (*change)(OverlapPolicy&)) {
  change(p);
  return p;
}

}  // namespace

std::vector<OverlapPolicy> nccl_candidates(const OverlapPolicy& base) {
  std::vector<OverlapPolicy> out;
  // Fewer, smaller NCCL CTAs need less room beside compute; cluster size 1 lets single CTAs be
  // placed wherever one fits instead of four co-scheduled on one GPC.
  for (int max_ctas : {4, 8, 16}) {
    OverlapPolicy p = base;
    p.nccl_max_ctas = max_ctas;
    out.push_back(p);
  }
  out.push_back(with(base, [](OverlapPolicy& p) { p.nccl_cga_cluster_size = 1; }));
  out.push_back(with(base, [](OverlapPolicy& p) { p.nccl_cta_policy = NcclCtaPolicy::Efficiency; }));
  return out;
}

}  // namespace tandem
