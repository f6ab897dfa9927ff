#include "harness/footprints.h"
#include "tandem/kernel_names.h"

namespace tandem::bench {

FootprintRecord footprint_record(const CapturedLaunch& launch, const DeviceLimits& limits) {
  FootprintRecord r;
  r.kernel = launch.kernel_name;
  r.grid_blocks = static_cast<int>(launch.grid.x * launch.grid.y * launch.grid.z);
  r.footprint = launch.footprint;
  r.blocks_per_sm = residency(limits, launch.footprint).blocks_per_sm;
  return r;
}

std::optional<FootprintRecord> first_nccl_kernel(const std::vector<CapturedLaunch>& launches,
                                                 const DeviceLimits& limits) {
  for (const auto& launch : launches)
    if (is_nccl_kernel_name(launch.kernel_name)) return footprint_record(launch, limits);
  return std::nullopt;
}

}  // namespace tandem::bench
