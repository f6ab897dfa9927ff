#include "tandem/residency_plan.h"

#include <cstdio>

namespace tandem {

std::vector<PlanLevel> plan_levels(const DeviceLimits& gpu, const KernelFootprint& kernel, const KernelFootprint& comm,
                                   const std::optional<ShapePlan>& chosen) {
  std::vector<PlanLevel> levels;
  const int natural = residency(gpu, kernel).blocks_per_sm;
  for (int blocks = natural; blocks >= 1; --blocks) {
    const auto dynamic = dynamic_smem_for_target(gpu, kernel, blocks);
    if (!dynamic) continue;  // no padding lands exactly on this level
    KernelFootprint shaped = kernel;
    shaped.dynamic_smem = *dynamic;
    PlanLevel level;
    level.blocks_per_sm = blocks;
    level.dynamic_smem = *dynamic;
    level.residency = residency(gpu, shaped);
    level.compute_fraction = static_cast<double>(blocks) / natural;
    level.comm_fits = fits_beside(gpu, shaped, blocks, comm);
    level.comm_fits_after_retire = fits_beside(gpu, shaped, blocks - 1, comm);
    level.is_auto = chosen && chosen->blocks_per_sm == blocks;
    levels.push_back(level);
  }
  return levels;
}

std::string plan_table_text(const std::vector<PlanLevel>& levels) {
  char line[256];
  std::snprintf(line, sizeof(line), "%9s %10s %10s %11s %10s %-13s %-9s %-12s %s\n", "blocks/SM", "dsmem[B]",
                "dsmem[KiB]", "warp_occ[%]", "compute[%]", "limiter", "comm_fits", "after_retire", "shape:auto");
  std::string out = line;
  for (const auto& l : levels) {
    std::snprintf(line, sizeof(line), "%9d %10lld %10.1f %11.1f %10.1f %-13s %-9s %-12s %s\n", l.blocks_per_sm,
                  static_cast<long long>(l.dynamic_smem), l.dynamic_smem / 1024.0, 100.0 * l.residency.warp_occupancy,
                  100.0 * l.compute_fraction, to_string(l.residency.limiter), l.comm_fits ? "yes" : "no",
                  l.comm_fits_after_retire ? "yes" : "no", l.is_auto ? "<- auto" : "");
    out += line;
  }
  return out;
}

}  // namespace tandem
