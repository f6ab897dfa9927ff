#pragma once
// The residency plan of `tandem plan`: for a kernel on a GPU, every residency it can be shaped to
// (natural down to 1 block per SM), the padding to request, the occupancy left and whether one
// communication CTA fits beside it; the level shape:auto would pick is marked. Pure C++, from the
// occupancy model alone: `tandem plan` prints it for any catalogued GPU, `tandem bench` on one GPU
// for each shapeable workload on the GPU it found.
#include <optional>
#include <string>
#include <vector>

#include "tandem/occupancy.h"

namespace tandem {

struct PlanLevel {
  int blocks_per_sm = 0;
  int64_t dynamic_smem = 0;
  Residency residency;
  double compute_fraction = 0;  // blocks / natural blocks
  bool comm_fits = false;
  bool comm_fits_after_retire = false;
  bool is_auto = false;
};

// The levels, natural first; a level no padding lands on exactly is left out. `chosen`: shape:auto's
// (least_shaping_with_room), marked.
std::vector<PlanLevel> plan_levels(const DeviceLimits& gpu, const KernelFootprint& kernel, const KernelFootprint& comm,
                                   const std::optional<ShapePlan>& chosen);
// The levels as a fixed-width table: a column header, then one line per level (each ending in '\n').
std::string plan_table_text(const std::vector<PlanLevel>& levels);

}  // namespace tandem
