// The residency model. It follows the rules of cudaOccupancyMaxActiveBlocksPerMultiprocessor with
// the default carveout preference, as documented by the toolkit's reference calculator
// (cuda_occupancy.h), written independently here so it also serves GPUs that are not present:
//
//  - threads: warps are the unit; a block takes ceil(threads / warp_size) warp slots.
//  - registers: each warp gets regs_per_thread * warp_size registers rounded up to reg_alloc_unit,
//    taken from one of reg_subpartitions equal slices of the register file, so the SM holds
//    subpartitions * floor(slice / regs_per_warp) warps of one kernel. A block is rejected
//    outright when its registers, with its warps rounded up to a multiple of the subpartition
//    count, exceed the per-block limit (the hardware's launch check).
//  - shared memory: static + dynamic + the per-block reservation, rounded up to smem_alloc_unit,
//    against the whole per-SM shared memory: with no carveout preference, the driver picks the
//    carveout that maximises residency, i.e. the largest.
//  - block slots: max_blocks_per_sm.
// Not modelled: named-barrier limits (sm90 kernels using many bar.sync ids), partitioned global
// caching (Pascal only), and cluster placement: a kernel with cluster_size > 1 is limited per SM
// exactly as one without; whether whole clusters find co-scheduled SMs in one GPC is not modelled.
#include "tandem/occupancy.h"

#include <algorithm>
#include <climits>
#include <vector>

#include "tandem/enum_table.h"
#include "tandem/error.h"

namespace tandem {

const char* to_string(Limiter limiter) {
  // In the enum's order.
  static constexpr const char* kNames[] = {"threads", "blocks", "registers", "shared-memory", "none"};
  static_assert(covers(kNames, Limiter::None), "one name per Limiter");
  return table_entry(kNames, limiter);
}

namespace {

int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }
int64_t round_up(int64_t x, int64_t unit) { return unit > 0 ? ceil_div(x, unit) * unit : x; }

// A DeviceLimits with zero or negative limits, fewer threads per SM than a warp (no warp slot, so
// every ratio to the warp slots would divide by zero), or a per-thread register maximum whose warp
// exceeds the register file (a warp's registers, kept in an int, could overflow it) is a
// programming error (a half-filled catalogue entry or a failed device query), not a property of
// the kernel, so it throws rather than returning 0.
void require_valid(const DeviceLimits& d) {
  TANDEM_REQUIRE(d.warp_size > 0 && d.max_threads_per_sm > 0 && d.max_threads_per_block > 0 &&
                     d.max_blocks_per_sm > 0 && d.regs_per_sm > 0 && d.max_regs_per_block > 0 &&
                     d.max_regs_per_thread > 0 && d.reg_alloc_unit > 0 && d.reg_subpartitions > 0 &&
                     d.smem_per_sm > 0 && d.max_smem_per_block > 0 && d.smem_alloc_unit > 0 &&
                     d.smem_reserved_per_block >= 0 && d.max_threads_per_sm >= d.warp_size &&
                     int64_t{d.max_regs_per_thread} * d.warp_size <= d.regs_per_sm,
                 "device limits of '" + d.name +
                     "' are inconsistent (a limit is zero or negative, an SM has no warp slot, or "
                     "a warp at the register maximum exceeds the register file)");
}

int warps_per_block(const DeviceLimits& d, const KernelFootprint& k) {
  return static_cast<int>(ceil_div(std::max(k.threads_per_block, 0), d.warp_size));
}

int max_warps_per_sm(const DeviceLimits& d) { return d.max_threads_per_sm / d.warp_size; }

// Registers one warp of the kernel holds after allocation granularity.
int regs_per_warp(const DeviceLimits& d, const KernelFootprint& k) {
  return static_cast<int>(round_up(int64_t{std::max(k.regs_per_thread, 0)} * d.warp_size, d.reg_alloc_unit));
}

int regs_per_subpartition(const DeviceLimits& d) { return d.regs_per_sm / d.reg_subpartitions; }

// Why a single block of this footprint can never be resident, or None if it can be.
Limiter invalid_reason(const DeviceLimits& d, const KernelFootprint& k) {
  if (k.threads_per_block <= 0 || k.threads_per_block > d.max_threads_per_block) return Limiter::Threads;
  if (k.regs_per_thread < 0 || k.regs_per_thread > d.max_regs_per_thread) return Limiter::Registers;
  const int64_t per_warp = regs_per_warp(d, k);
  const int64_t warps = warps_per_block(d, k);
  // The launch check counts the block's warps rounded up to a multiple of the subpartitions.
  const int64_t regs_checked = per_warp * round_up(warps, d.reg_subpartitions);
  if (regs_checked > d.max_regs_per_block) return Limiter::Registers;
  if (k.static_smem < 0 || k.dynamic_smem < 0 || k.static_smem + k.dynamic_smem > d.max_smem_per_block)
    return Limiter::SharedMemory;
  // No cluster support (max_cluster_size 0) or a cluster above the portable limit: the launch fails.
  // The enum has no cluster entry; block scheduling is the closest resource.
  if (k.cluster_size < 1 || (k.cluster_size > 1 && k.cluster_size > d.max_cluster_size)) return Limiter::Blocks;
  return Limiter::None;
}

// Per-resource block limits of a valid footprint.
struct BlockLimits {
  int threads = INT_MAX;
  int blocks = INT_MAX;
  int registers = INT_MAX;
  int smem = INT_MAX;
};

BlockLimits block_limits(const DeviceLimits& d, const KernelFootprint& k) {
  BlockLimits l;
  const int warps = warps_per_block(d, k);
  l.threads = max_warps_per_sm(d) / warps;
  l.blocks = d.max_blocks_per_sm;
  const int per_warp = regs_per_warp(d, k);
  if (per_warp > 0) {
    const int warps_per_slice = regs_per_subpartition(d) / per_warp;
    l.registers = warps_per_slice * d.reg_subpartitions / warps;
  }
  const int64_t smem = smem_per_block(d, k);
  if (smem > 0) l.smem = static_cast<int>(std::min<int64_t>(d.smem_per_sm / smem, INT_MAX));
  return l;
}

KernelFootprint with_dynamic_smem(KernelFootprint k, int64_t dynamic_smem) {
  k.dynamic_smem = dynamic_smem;
  return k;
}

// Places warps on the register-file subpartitions. Warps of the compute blocks are spread evenly
// (which is what the single-kernel rule above assumes); each warp of the extra block then goes to
// the slice with the most free registers (optimal for warps of one size). Given the even spread,
// this is the best case; the hardware's slot assignment after out-of-order block retirement can be
// worse, and a freer placement of the compute warps could occasionally be better.
bool registers_fit_beside(const DeviceLimits& d, const KernelFootprint& compute, int resident,
                          const KernelFootprint& comm) {
  std::vector<int64_t> free_regs(d.reg_subpartitions, regs_per_subpartition(d));
  const int64_t compute_warps = int64_t{resident} * warps_per_block(d, compute);
  const int compute_regs = regs_per_warp(d, compute);
  for (int64_t w = 0; w < compute_warps; ++w) free_regs[w % d.reg_subpartitions] -= compute_regs;
  const int comm_regs = regs_per_warp(d, comm);
  for (int w = 0; w < warps_per_block(d, comm); ++w) {
    auto roomiest = std::max_element(free_regs.begin(), free_regs.end());
    *roomiest -= comm_regs;
  }
  return std::all_of(free_regs.begin(), free_regs.end(), [](int64_t r) { return r >= 0; });
}

}  // namespace

int regs_per_block(const DeviceLimits& d, const KernelFootprint& k) {
  require_valid(d);
  return regs_per_warp(d, k) * warps_per_block(d, k);
}

int64_t smem_per_block(const DeviceLimits& d, const KernelFootprint& k) {
  require_valid(d);
  const int64_t bytes =
      std::max<int64_t>(k.static_smem, 0) + std::max<int64_t>(k.dynamic_smem, 0) + d.smem_reserved_per_block;
  return round_up(bytes, d.smem_alloc_unit);
}

Residency residency(const DeviceLimits& d, const KernelFootprint& k) {
  require_valid(d);
  Residency r;
  const Limiter invalid = invalid_reason(d, k);
  if (invalid != Limiter::None) {
    r.limiter = invalid;
    return r;
  }
  const BlockLimits l = block_limits(d, k);
  // Ties go to the first resource in the order threads, blocks, registers, shared memory (the order
  // of the enum), so a shaped level reports shared memory only when the padding alone sets it.
  r.blocks_per_sm = l.threads;
  r.limiter = Limiter::Threads;
  if (l.blocks < r.blocks_per_sm) r.blocks_per_sm = l.blocks, r.limiter = Limiter::Blocks;
  if (l.registers < r.blocks_per_sm) r.blocks_per_sm = l.registers, r.limiter = Limiter::Registers;
  if (l.smem < r.blocks_per_sm) r.blocks_per_sm = l.smem, r.limiter = Limiter::SharedMemory;

  r.threads_used = r.blocks_per_sm * k.threads_per_block;
  r.regs_used = r.blocks_per_sm * regs_per_block(d, k);
  r.smem_used = r.blocks_per_sm * smem_per_block(d, k);
  r.warp_occupancy = static_cast<double>(r.blocks_per_sm) * warps_per_block(d, k) / max_warps_per_sm(d);
  return r;
}

bool fits_beside(const DeviceLimits& d, const KernelFootprint& compute, int resident, const KernelFootprint& comm) {
  require_valid(d);
  if (resident < 0) return false;
  if (residency(d, comm).blocks_per_sm < 1) return false;
  if (resident > 0 && residency(d, compute).blocks_per_sm < 1) return false;
  const int64_t warps = int64_t{resident} * warps_per_block(d, compute) + warps_per_block(d, comm);
  if (warps > max_warps_per_sm(d)) return false;
  if (int64_t{resident} + 1 > d.max_blocks_per_sm) return false;
  if (int64_t{resident} * smem_per_block(d, compute) + smem_per_block(d, comm) > d.smem_per_sm) return false;
  return registers_fit_beside(d, compute, resident, comm);
}

std::optional<int64_t> dynamic_smem_for_target(const DeviceLimits& d, const KernelFootprint& k, int blocks_per_sm,
                                               const std::optional<KernelFootprint>& room_for) {
  require_valid(d);
  if (blocks_per_sm < 1) return std::nullopt;
  const Residency natural = residency(d, k);
  if (natural.blocks_per_sm < blocks_per_sm) return std::nullopt;

  int64_t dynamic = k.dynamic_smem;
  if (natural.blocks_per_sm > blocks_per_sm) {
    // Only shared memory can be raised, so it alone must stop block target+1: the allocation must
    // exceed smem_per_sm / (target + 1). The smallest such allocation is a whole number of units;
    // the padding is the dynamic size that fills it exactly (bytes below that cost the same).
    const int64_t allocation = round_up(d.smem_per_sm / (blocks_per_sm + 1) + 1, d.smem_alloc_unit);
    dynamic = std::max(dynamic, allocation - k.static_smem - d.smem_reserved_per_block);
  }
  const KernelFootprint shaped = with_dynamic_smem(k, dynamic);
  // Empty window (allocation above smem_per_sm / target) or above the per-block maximum.
  if (residency(d, shaped).blocks_per_sm != blocks_per_sm) return std::nullopt;
  // A larger padding only takes shared memory from the extra block, so if the least padding leaves
  // no room, none does.
  if (room_for && !fits_beside(d, shaped, blocks_per_sm, *room_for)) return std::nullopt;
  return dynamic;
}

std::optional<ShapePlan> least_shaping_with_room(const DeviceLimits& d, const KernelFootprint& compute,
                                                 const KernelFootprint& comm) {
  require_valid(d);
  const int natural = residency(d, compute).blocks_per_sm;
  for (int blocks = natural; blocks >= 1; --blocks) {
    if (auto dynamic = dynamic_smem_for_target(d, compute, blocks, comm)) return ShapePlan{blocks, *dynamic};
  }
  return std::nullopt;
}

}  // namespace tandem
