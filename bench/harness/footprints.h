#pragma once
// The kernels a case launches, as the report records them: read from a graph capture
// (tandem/kernel_footprint_probe.h) and placed on this GPU by the occupancy model.
#include <optional>
#include <vector>

#include "report/report.h"
#include "tandem/kernel_footprint_probe.h"

namespace tandem::bench {

FootprintRecord footprint_record(const CapturedLaunch& launch, const DeviceLimits& limits);
// The first NCCL kernel among `launches`; none when NCCL copied instead of launching (one rank,
// copy engines).
std::optional<FootprintRecord> first_nccl_kernel(const std::vector<CapturedLaunch>& launches,
                                                 const DeviceLimits& limits);

}  // namespace tandem::bench
