// The residency model (include/tandem/occupancy.h) on fuzzed kernel footprints
// and GPU limits. The input is NAME=VALUE lines:
//   gpu=h200                                     a catalogue GPU (default h200)
//   compute=threads=256,regs=32,dsmem=48KiB      the compute kernel (footprint
//   text; required) comm=threads=544,regs=96                     the
//   collective's CTA (default: typical NCCL CTA) max_blocks_per_sm=16 any
//   DeviceLimits field: overrides the catalogue
// Asserted, besides no crash and no undefined behaviour: residency never
// exceeds a hardware limit, is the largest that fits, never grows with more
// shared memory; the shaping answers (dynamic_smem_for_target,
// least_shaping_with_room) reach exactly what they promise.
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "fuzz_common.h"
#include "tandem/error.h"
#include "tandem/footprint_text.h"
#include "tandem/gpu_catalog.h"
#include "tandem/occupancy.h"

namespace {

using tandem::DeviceLimits;
using tandem::KernelFootprint;

// Limits stay within what a GPU could plausibly report (zero and negative
// included, which the model must refuse): 2^24 threads, registers or blocks per
// SM, 1 TiB of shared memory.
constexpr int64_t kMaxCount = int64_t{1} << 24;
constexpr int64_t kMaxBytes = int64_t{1} << 40;

std::optional<int64_t> number(const std::string& text, int64_t bound) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return std::clamp<int64_t>(value, -1, bound);
}

void override_limit(DeviceLimits& d, const std::string& field, const std::string& text) {
  const std::map<std::string, int*> counts = {{"sm_count", &d.sm_count},
                                              {"warp_size", &d.warp_size},
                                              {"max_threads_per_sm", &d.max_threads_per_sm},
                                              {"max_threads_per_block", &d.max_threads_per_block},
                                              {"max_blocks_per_sm", &d.max_blocks_per_sm},
                                              {"regs_per_sm", &d.regs_per_sm},
                                              {"max_regs_per_thread", &d.max_regs_per_thread},
                                              {"max_regs_per_block", &d.max_regs_per_block},
                                              {"reg_alloc_unit", &d.reg_alloc_unit},
                                              {"reg_subpartitions", &d.reg_subpartitions},
                                              {"max_cluster_size", &d.max_cluster_size}};
  const std::map<std::string, int64_t*> bytes = {{"smem_per_sm", &d.smem_per_sm},
                                                 {"max_smem_per_block", &d.max_smem_per_block},
                                                 {"smem_reserved_per_block", &d.smem_reserved_per_block},
                                                 {"smem_alloc_unit", &d.smem_alloc_unit}};
  if (auto it = counts.find(field); it != counts.end()) {
    if (auto value = number(text, kMaxCount)) *it->second = static_cast<int>(*value);
  } else if (auto it = bytes.find(field); it != bytes.end()) {
    if (auto value = number(text, kMaxBytes)) *it->second = *value;
  }
}

int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }
int64_t round_up(int64_t x, int64_t unit) { return ceil_div(x, unit) * unit; }

// The per-SM resources `blocks` blocks of `k` take, from the documented
// allocation rules.
struct Use {
  int64_t warps, regs_per_warp, smem;
};
Use use_of(const DeviceLimits& d, const KernelFootprint& k, int64_t blocks) {
  const int64_t warps = ceil_div(k.threads_per_block, d.warp_size);
  const int64_t regs_per_warp = round_up(int64_t{k.regs_per_thread} * d.warp_size, d.reg_alloc_unit);
  const int64_t smem = round_up(k.static_smem + k.dynamic_smem + d.smem_reserved_per_block, d.smem_alloc_unit);
  return {blocks * warps, regs_per_warp, blocks * smem};
}

// Whether `blocks` blocks of `k` fit on one SM: warp slots, block slots, shared
// memory, and registers per subpartition (a warp's registers come from one
// slice).
bool fits(const DeviceLimits& d, const KernelFootprint& k, int64_t blocks) {
  const Use u = use_of(d, k, blocks);
  const int64_t warps_by_regs =
      u.regs_per_warp > 0 ? (d.regs_per_sm / d.reg_subpartitions / u.regs_per_warp) * d.reg_subpartitions : INT64_MAX;
  return u.warps <= d.max_threads_per_sm / d.warp_size && blocks <= d.max_blocks_per_sm && u.smem <= d.smem_per_sm &&
         u.warps <= warps_by_regs;
}

KernelFootprint with_dynamic(KernelFootprint k, int64_t dynamic) {
  k.dynamic_smem = dynamic;
  return k;
}

// The whole input, for the message of a broken invariant (it holds the limit
// overrides too).
std::string current_input;

std::string describe(const DeviceLimits& d, const KernelFootprint& k) {
  return d.name + " / " + tandem::footprint_to_string(k) + " (input: '" + current_input + "')";
}

void check_residency(const DeviceLimits& d, const KernelFootprint& k) {
  const tandem::Residency r = tandem::residency(d, k);
  const std::string what =
      describe(d, k) + " -> " + std::to_string(r.blocks_per_sm) + " (" + tandem::to_string(r.limiter) + ")";
  FUZZ_CHECK(r.blocks_per_sm >= 0 && r.blocks_per_sm <= d.max_blocks_per_sm, what);
  FUZZ_CHECK(r.threads_used == int64_t{r.blocks_per_sm} * k.threads_per_block, what);
  FUZZ_CHECK(r.threads_used <= d.max_threads_per_sm, what);
  FUZZ_CHECK(r.regs_used <= d.regs_per_sm, what);
  FUZZ_CHECK(r.smem_used <= d.smem_per_sm, what);
  FUZZ_CHECK(r.warp_occupancy >= 0 && r.warp_occupancy <= 1, what);
  if (r.blocks_per_sm == 0) {
    FUZZ_CHECK(r.limiter != tandem::Limiter::None && r.threads_used == 0 && r.smem_used == 0, what);
    return;
  }
  // One block passes the launch checks, and the residency is the largest that
  // fits.
  FUZZ_CHECK(k.threads_per_block <= d.max_threads_per_block && k.regs_per_thread <= d.max_regs_per_thread &&
                 k.static_smem + k.dynamic_smem <= d.max_smem_per_block,
             what);
  FUZZ_CHECK(fits(d, k, r.blocks_per_sm), what);
  FUZZ_CHECK(!fits(d, k, int64_t{r.blocks_per_sm} + 1), what);
}

void check_shaping(const DeviceLimits& d, const KernelFootprint& k, const KernelFootprint& comm) {
  const int natural = tandem::residency(d, k).blocks_per_sm;
  // More shared memory never gives more blocks.
  for (int64_t extra : {int64_t{1}, d.smem_alloc_unit, int64_t{4096}, int64_t{48} << 10}) {
    const KernelFootprint padded = with_dynamic(k, k.dynamic_smem + extra);
    FUZZ_CHECK(tandem::residency(d, padded).blocks_per_sm <= natural, describe(d, padded));
  }
  // Every target up to the natural residency: the padding gives exactly the
  // target, is the least allocation that does, and (with room_for) leaves room
  // for one collective CTA.
  std::optional<int> largest_with_room;
  for (int target = std::min(natural, 64); target >= 1; --target) {
    const std::string what = describe(d, k) + " target " + std::to_string(target);
    if (const auto dynamic = tandem::dynamic_smem_for_target(d, k, target)) {
      FUZZ_CHECK(*dynamic >= k.dynamic_smem, what);
      FUZZ_CHECK(tandem::residency(d, with_dynamic(k, *dynamic)).blocks_per_sm == target, what);
      const int64_t one_unit_less = *dynamic - d.smem_alloc_unit;
      if (*dynamic > k.dynamic_smem && one_unit_less >= k.dynamic_smem)
        FUZZ_CHECK(tandem::residency(d, with_dynamic(k, one_unit_less)).blocks_per_sm > target, what);
    }
    if (const auto dynamic = tandem::dynamic_smem_for_target(d, k, target, comm)) {
      FUZZ_CHECK(tandem::residency(d, with_dynamic(k, *dynamic)).blocks_per_sm == target, what);
      FUZZ_CHECK(tandem::fits_beside(d, with_dynamic(k, *dynamic), target, comm), what);
      if (!largest_with_room) largest_with_room = target;
    }
  }
  const auto plan = tandem::least_shaping_with_room(d, k, comm);
  const std::string what = describe(d, k) + " beside " + tandem::footprint_to_string(comm);
  FUZZ_CHECK(plan.has_value() == largest_with_room.has_value(), what);
  if (plan && natural <= 64) FUZZ_CHECK(plan->blocks_per_sm == *largest_with_room, what);
  if (plan) {
    const KernelFootprint shaped = with_dynamic(k, plan->dynamic_smem);
    FUZZ_CHECK(tandem::residency(d, shaped).blocks_per_sm == plan->blocks_per_sm, what);
    FUZZ_CHECK(tandem::fits_beside(d, shaped, plan->blocks_per_sm, comm), what);
  }
}

// fits_beside's answer never breaks a per-SM limit.
void check_fits_beside(const DeviceLimits& d, const KernelFootprint& k, const KernelFootprint& comm) {
  const int natural = tandem::residency(d, k).blocks_per_sm;
  for (int resident = 0; resident <= std::min(natural, 64); ++resident) {
    if (!tandem::fits_beside(d, k, resident, comm)) continue;
    const Use c = use_of(d, k, resident);
    const Use m = use_of(d, comm, 1);
    const std::string what =
        describe(d, k) + " x" + std::to_string(resident) + " beside " + tandem::footprint_to_string(comm);
    FUZZ_CHECK(c.warps + m.warps <= d.max_threads_per_sm / d.warp_size, what);
    FUZZ_CHECK(resident + 1 <= d.max_blocks_per_sm, what);
    FUZZ_CHECK(c.smem + m.smem <= d.smem_per_sm, what);
    FUZZ_CHECK(c.warps * c.regs_per_warp + m.warps * m.regs_per_warp <= d.regs_per_sm, what);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  current_input = tandem_fuzz::text_of(data, size);
  std::map<std::string, std::string> lines = tandem_fuzz::environment_of(current_input, [](std::string_view) {});
  DeviceLimits d;
  KernelFootprint compute;
  std::optional<KernelFootprint> comm_given;
  try {
    d = tandem::gpu_limits(lines.count("gpu") ? lines["gpu"] : "h200");
    if (!lines.count("compute")) return -1;
    compute = tandem::parse_footprint(lines["compute"]);
    if (lines.count("comm")) comm_given = tandem::parse_footprint(lines["comm"]);
  } catch (const tandem::Error&) {
    return -1;  // the parsers have fuzzers of their own
  }
  for (const auto& [field, value] : lines) override_limit(d, field, value);

  KernelFootprint comm;
  try {
    comm = comm_given ? *comm_given : tandem::typical_nccl_footprint(d);
    tandem::residency(d, compute);
  } catch (const tandem::Error& error) {
    // Only incomplete limits may be refused, and they must be.
    const bool incomplete = d.warp_size <= 0 || d.max_threads_per_sm <= 0 || d.max_threads_per_block <= 0 ||
                            d.max_blocks_per_sm <= 0 || d.regs_per_sm <= 0 || d.max_regs_per_block <= 0 ||
                            d.max_regs_per_thread <= 0 || d.reg_alloc_unit <= 0 || d.reg_subpartitions <= 0 ||
                            d.smem_per_sm <= 0 || d.max_smem_per_block <= 0 || d.smem_alloc_unit <= 0 ||
                            d.smem_reserved_per_block < 0 || d.max_threads_per_sm < d.warp_size ||
                            int64_t{d.max_regs_per_thread} * d.warp_size > d.regs_per_sm;
    FUZZ_CHECK(incomplete, describe(d, compute) + ": " + error.what());
    return 0;
  }
  check_residency(d, compute);
  check_residency(d, comm);
  check_fits_beside(d, compute, comm);
  check_shaping(d, compute, comm);
  return 0;
}
