#include <algorithm>

#include "harness/tuner.h"

namespace tandem::bench {

std::vector<OverlapPolicy> order_candidates() {
  return parse_policy_list("concurrent,priority,comm-first,comm-first+priority");
}

std::vector<OverlapPolicy> shaping_candidates(const OverlapPolicy& base, const CaseTraits& traits) {
  std::vector<OverlapPolicy> out;
  if (traits.natural_blocks_per_sm <= 0) return out;  // nothing to shape
  OverlapPolicy p = base;
  p.shape = {ShapeTarget::Kind::Auto, 0, 0};
  out.push_back(p);
  // Every level below the natural residency: the best trade-off between compute slowdown and room
  // for the collective differs per kernel (DESIGN.md: 3 blocks/SM for a streaming kernel).
  for (int blocks = 1; blocks < traits.natural_blocks_per_sm; ++blocks) {
    p.shape = {ShapeTarget::Kind::BlocksPerSm, blocks, 0};
    out.push_back(p);
  }
  return out;
}

std::vector<OverlapPolicy> sm_target_candidates(const OverlapPolicy& base, const CaseTraits& traits) {
  std::vector<OverlapPolicy> out;
  if (!traits.has_sm_target) return out;
  // Leave 8..48 SMs to the collective: NCCL uses up to 24 channels (one SM each) on 2 H200s; fewer
  // when its CTA count is capped.
  for (int freed : {8, 16, 24, 32, 48}) {
    if (traits.sm_count - freed < traits.sm_count / 2) break;
    OverlapPolicy p = base;
    p.sm_target = traits.sm_count - freed;
    out.push_back(p);
  }
  return out;
}

std::vector<OverlapPolicy> sm_target_refinements(const OverlapPolicy& best, const CaseTraits& traits) {
  std::vector<OverlapPolicy> out;
  if (!best.sm_target) return out;
  for (int delta : {-4, 4}) {
    const int target = *best.sm_target + delta;
    if (target < traits.sm_count / 2 || target >= traits.sm_count) continue;
    OverlapPolicy p = best;
    p.sm_target = target;
    out.push_back(p);
  }
  return out;
}

std::vector<OverlapPolicy> green_candidates(const OverlapPolicy& base, const CaseTraits& traits) {
  std::vector<OverlapPolicy> out;
  // Partitions come in multiples of 8 SMs on sm_90; leave 16 or 32 to the collective.
  for (int freed : {16, 32}) {
    const int sms = (traits.sm_count - freed) / 8 * 8;
    if (sms <= 0) continue;
    OverlapPolicy p = base;
    p.green_sms = sms;
    p.sm_target.reset();  // the partition already caps the GEMM
    out.push_back(p);
  }
  return out;
}

std::vector<OverlapPolicy> symmetric_candidates(const OverlapPolicy& base) {
  // Registered buffers let NCCL load from and store to the peer's buffers directly instead of
  // staging through its FIFOs: fewer HBM passes, which is what a memory-bound neighbour competes for.
  if (base.copy_engine) return {};
  OverlapPolicy p = base;
  p.nccl_symmetric = true;
  return {p};
}

std::vector<OverlapPolicy> copy_engine_candidates(const OverlapPolicy& base) {
  // On copy engines the collective needs no SM at all; its NCCL resource knobs no longer apply.
  OverlapPolicy p = base;
  p.copy_engine = true;
  p.nccl_symmetric = false;  // copy engines register the windows themselves
  p.nccl_min_ctas.reset();
  p.nccl_max_ctas.reset();
  p.nccl_cga_cluster_size.reset();
  p.nccl_cta_policy = NcclCtaPolicy::Default;
  std::vector<OverlapPolicy> out{p};
  // And bare copy engines under every launch order: the best policy before this stage may have
  // settled on an order for NCCL's own kernels that is wrong for copy engines, whose variants would
  // then never meet them. Beside a persistent GEMM, NCCL's own copy-engine all-gather helped only
  // enqueued first (`comm-first+copy-engine` 34 %, `copy-engine` 11-12 %); through the exchange
  // (copy_engine_reduction.h) it is the other way round (`copy-engine` 38-40 %, `comm-first+...` 28 %).
  for (OverlapPolicy order : order_candidates()) {
    order.copy_engine = true;
    if (std::none_of(out.begin(), out.end(), [&](const OverlapPolicy& o) { return o == order; })) out.push_back(order);
  }
  return out;
}

std::vector<OverlapPolicy> partition_candidates(const OverlapPolicy& base, const CaseTraits& traits) {
  std::vector<OverlapPolicy> out;
  for (int freed : {8, 16, 24, 32}) {
    OverlapPolicy p = base;
    p.copy_engine = false;
    p.shape = {};
    p.nccl_min_ctas.reset();
    p.nccl_max_ctas = freed;
    p.nccl_cga_cluster_size = 1;
    p.nccl_cta_policy = NcclCtaPolicy::Default;
    if (traits.has_sm_target) {
      p.sm_target = traits.sm_count - freed;
      p.green_sms.reset();
    } else {
      p.sm_target.reset();
      p.green_sms = (traits.sm_count - freed) / 8 * 8;  // partitions are multiples of 8 SMs on sm_90
      if (*p.green_sms <= 0) continue;
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace tandem::bench
