#pragma once
// The residency model: device limits x kernel footprint -> resident blocks per SM.
//
// Pure C++ (no CUDA call), so it runs on CPU-only machines, is unit-tested there against
// fixtures recorded with cudaOccupancyMaxActiveBlocksPerMultiprocessor on an H200, and can plan
// for GPUs we do not have (see gpu_catalog.h).
#include <cstdint>
#include <optional>
#include <string>

namespace tandem {

// Per-SM hardware limits and allocation rules of one GPU model.
struct DeviceLimits {
  std::string name;    // "NVIDIA H200"
  std::string arch;    // "sm_90", "gfx90a"
  int sm_count = 0;    // SMs (CUs on AMD)
  int warp_size = 32;  // 64 on AMD CDNA
  int max_threads_per_sm = 0;
  int max_threads_per_block = 1024;
  int max_blocks_per_sm = 0;
  int regs_per_sm = 0;  // 32-bit registers
  int max_regs_per_thread = 255;
  int max_regs_per_block = 65536;
  int reg_alloc_unit = 256;             // registers are allocated per warp in units of this many
  int reg_subpartitions = 4;            // the register file is split among this many schedulers; a warp's
                                        // registers come from one of them
  int64_t smem_per_sm = 0;              // bytes usable by blocks (largest carveout)
  int64_t max_smem_per_block = 0;       // bytes, opt-in maximum (static + dynamic)
  int64_t smem_reserved_per_block = 0;  // bytes the runtime reserves for each block (1 KiB sm80+)
  int64_t smem_alloc_unit = 128;        // bytes
  int max_cluster_size = 8;             // portable cluster size limit (0: no clusters)
  double hbm_bandwidth_gbps = 0;        // device memory bandwidth, GB/s (10^9 B/s), datasheet
};

// What one block of a kernel needs.
struct KernelFootprint {
  std::string name;  // optional, for messages
  int threads_per_block = 0;
  int regs_per_thread = 0;
  int64_t static_smem = 0;   // bytes
  int64_t dynamic_smem = 0;  // bytes
  int cluster_size = 1;      // blocks per cluster (product of the cluster dims)
};

enum class Limiter { Threads, Blocks, Registers, SharedMemory, None };
const char* to_string(Limiter);

struct Residency {
  int blocks_per_sm = 0;  // 0: the kernel cannot run at all with this footprint
  Limiter limiter = Limiter::None;
  // Resources used on one SM by `blocks_per_sm` blocks.
  int threads_used = 0;
  int regs_used = 0;
  int64_t smem_used = 0;
  double warp_occupancy = 0;  // resident warps / max warps per SM
};

// Resident blocks per SM of a kernel alone on an SM, as cudaOccupancyMaxActiveBlocksPerMultiprocessor
// computes it (largest shared-memory carveout).
Residency residency(const DeviceLimits&, const KernelFootprint&);

// Registers one block occupies after allocation granularity.
int regs_per_block(const DeviceLimits&, const KernelFootprint&);
// Shared memory one block occupies (static + dynamic + reserved, rounded to the allocation unit).
int64_t smem_per_block(const DeviceLimits&, const KernelFootprint&);

// The smallest dynamic shared memory (bytes) for which the kernel reaches exactly
// `blocks_per_sm` resident blocks per SM, or nullopt if unreachable (the kernel already reaches
// fewer blocks than the target, or the padding would exceed the per-block maximum).
// Shared memory is allocated in smem_alloc_unit steps, so the result is the least allocation that
// gives the target, expressed as the dynamic size that fills it exactly: a few bytes less would
// give the same residency (and the kernel may use the whole size), one unit less gives more blocks.
// At the kernel's natural residency it is the kernel's own dynamic_smem.
// When `room_for` is given, the padding must also leave room on the SM for one block of that
// footprint beside the `blocks_per_sm` compute blocks.
std::optional<int64_t> dynamic_smem_for_target(const DeviceLimits&, const KernelFootprint&, int blocks_per_sm,
                                               const std::optional<KernelFootprint>& room_for = {});

// Whether `resident` blocks of `compute` and one block of `comm` fit on one SM together, in
// threads, registers (per subpartition), shared memory and block slots.
bool fits_beside(const DeviceLimits&, const KernelFootprint& compute, int resident, const KernelFootprint& comm);

// The largest residency (>= 1) at which one `comm` block still fits beside the compute blocks,
// with the dynamic shared memory that enforces it; nullopt if not even one compute block leaves
// room (then only an SM-count cap or a launch order can help).
struct ShapePlan {
  int blocks_per_sm = 0;
  int64_t dynamic_smem = 0;  // total dynamic smem per block to request at launch
};
std::optional<ShapePlan> least_shaping_with_room(const DeviceLimits&, const KernelFootprint& compute,
                                                 const KernelFootprint& comm);

}  // namespace tandem
