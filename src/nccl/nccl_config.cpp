#include "tandem/nccl_config.h"

namespace tandem {

bool uses_default_nccl_settings(const OverlapPolicy& p) {
  return !p.nccl_min_ctas && !p.nccl_max_ctas && !p.nccl_cga_cluster_size &&
         p.nccl_cta_policy == NcclCtaPolicy::Default && !p.registers_windows();
}

void apply_nccl_settings(const OverlapPolicy& policy, ncclConfig_t& config) {
  if (policy.nccl_min_ctas) config.minCTAs = *policy.nccl_min_ctas;
  if (policy.nccl_max_ctas) config.maxCTAs = *policy.nccl_max_ctas;
  // A bound of the program's own that contradicts the policy's moves to it: the policy's bound wins
  // (minCTAs 32 under nccl-ctas:..4 becomes 4..4; maxCTAs 2 under nccl-ctas:8.. becomes 8..8). NCCL
  // would otherwise get min > max, which it resolves its own, undocumented way.
  const bool both_set = config.minCTAs != NCCL_CONFIG_UNDEF_INT && config.maxCTAs != NCCL_CONFIG_UNDEF_INT;
  if (both_set && config.minCTAs > config.maxCTAs) {
    if (policy.nccl_max_ctas && !policy.nccl_min_ctas)
      config.minCTAs = config.maxCTAs;
    else if (policy.nccl_min_ctas && !policy.nccl_max_ctas)
      config.maxCTAs = config.minCTAs;
  }
  if (policy.nccl_cga_cluster_size) config.cgaClusterSize = *policy.nccl_cga_cluster_size;
  if (policy.nccl_cta_policy == NcclCtaPolicy::Efficiency) config.CTAPolicy = NCCL_CTA_POLICY_EFFICIENCY;
  // Copy-engine collectives need CTA policy zero: NCCL then moves all-gather and all-to-all data in
  // symmetric windows with copy engines instead of CTAs.
  if (policy.nccl_cta_policy == NcclCtaPolicy::Zero || policy.copy_engine) config.CTAPolicy = NCCL_CTA_POLICY_ZERO;
}

std::string nccl_settings_key(const OverlapPolicy& policy) {
  std::string key;
  if (policy.nccl_min_ctas) key += "min" + std::to_string(*policy.nccl_min_ctas);
  if (policy.nccl_max_ctas) key += "max" + std::to_string(*policy.nccl_max_ctas);
  if (policy.nccl_cga_cluster_size) key += "cga" + std::to_string(*policy.nccl_cga_cluster_size);
  if (policy.nccl_cta_policy == NcclCtaPolicy::Efficiency) key += "eff";
  if (policy.nccl_cta_policy == NcclCtaPolicy::Zero || policy.copy_engine) key += "zero";
  if (policy.registers_windows()) key += policy.copy_engine ? "ce" : "win";
  return key;
}

}  // namespace tandem
