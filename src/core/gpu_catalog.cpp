// Published limits of the GPUs tandem plans for, as data.
//
// NVIDIA entries follow the CUDA Programming Guide's "compute capabilities" tables and the
// cudaDeviceProp values those GPUs report: sharedMemPerMultiprocessor (the largest carveout),
// sharedMemPerBlockOptin, reservedSharedMemPerBlock (1 KiB since sm80), regsPerMultiprocessor,
// regsPerBlock, maxThreadsPerMultiProcessor, maxBlocksPerMultiProcessor. Register allocation is per
// warp in units of 256 registers from one of 4 subpartitions on every architecture listed; the
// compiler never assigns more than 255 registers per thread. HBM bandwidth is the datasheet value
// (GB/s = 10^9 B/s). The H200 entry is checked against a real device by test_occupancy_fixtures.
#include "tandem/gpu_catalog.h"

#include <algorithm>
#include <cctype>

#include "tandem/error.h"
#include "tandem/text.h"

namespace tandem {

namespace {

struct CatalogEntry {
  std::string key;
  DeviceLimits limits;
};

// What differs between the NVIDIA architectures listed.
struct NvidiaArch {
  const char* arch;
  int max_threads_per_sm;
  int max_blocks_per_sm;
  int64_t smem_per_sm;         // the largest carveout
  int64_t max_smem_per_block;  // opt-in
  int max_cluster_size;        // portable limit (0: none; thread block clusters arrived with sm90)
};
constexpr NvidiaArch kAmpereGa102 = {"sm_86", 1536, 16, 100 * 1024, 99 * 1024, 0};   // 102400, 101376
constexpr NvidiaArch kAmpereGa100 = {"sm_80", 2048, 32, 164 * 1024, 163 * 1024, 0};  // 167936, 166912
// Clusters of 8 are the portable limit; 16 needs the non-portable opt-in.
constexpr NvidiaArch kHopper = {"sm_90", 2048, 32, 228 * 1024, 227 * 1024, 8};  // 233472, 232448

// The rest is shared by every sm80+ NVIDIA GPU listed: 64 K registers per SM and per block, 255 per
// thread, 1024 threads per block, 128-byte shared memory allocation unit with 1 KiB reserved per block.
DeviceLimits nvidia(std::string name, const NvidiaArch& a, int sm_count, double hbm_gbps) {
  DeviceLimits d;
  d.name = std::move(name);
  d.arch = a.arch;
  d.sm_count = sm_count;
  d.warp_size = 32;
  d.max_threads_per_sm = a.max_threads_per_sm;
  d.max_threads_per_block = 1024;
  d.max_blocks_per_sm = a.max_blocks_per_sm;
  d.regs_per_sm = 65536;
  d.max_regs_per_thread = 255;
  d.max_regs_per_block = 65536;
  d.reg_alloc_unit = 256;
  d.reg_subpartitions = 4;
  d.smem_per_sm = a.smem_per_sm;
  d.max_smem_per_block = a.max_smem_per_block;
  d.smem_reserved_per_block = 1024;
  d.smem_alloc_unit = 128;
  d.max_cluster_size = a.max_cluster_size;
  d.hbm_bandwidth_gbps = hbm_gbps;
  return d;
}

// One GCD of an MI250X (the unit HIP and RCCL see as a device), gfx90a / CDNA2, mapped onto the
// NVIDIA-shaped struct. Approximations:
//  - "SM" is a compute unit: 4 SIMDs, each with 512 unified VGPRs (256 arch + 256 AccVGPR) of 64
//    lanes: 512 KiB per CU = 131072 32-bit lane registers; a wavefront's VGPRs come from its own
//    SIMD, so the 4 SIMDs play the part of register subpartitions. VGPRs are allocated in granules
//    of 8 per lane, i.e. 512 registers per wavefront; regs_per_thread means the unified VGPR count
//    (arch + AccVGPR, whose alignment rules are ignored). SGPRs are not modelled.
//  - 8 wavefronts per SIMD on CDNA2 -> 32 per CU -> 2048 threads.
//  - Workgroups per CU: 16, the GCN hardware limit commonly cited; not confirmed for CDNA2.
//  - LDS: 64 KiB per CU, all of it usable by one workgroup, allocated in 512-byte granules
//    (128 dwords, gfx7+), nothing reserved.
//  - No thread block clusters.
//  - HBM: 3.2768 TB/s per MI250X, i.e. 1638.4 GB/s per GCD.
DeviceLimits mi250x_gcd() {
  DeviceLimits d;
  d.name = "AMD Instinct MI250X";
  d.arch = "gfx90a";
  d.sm_count = 110;
  d.warp_size = 64;
  d.max_threads_per_sm = 2048;
  d.max_threads_per_block = 1024;
  d.max_blocks_per_sm = 16;
  d.regs_per_sm = 4 * 512 * 64;  // 131072
  d.max_regs_per_thread = 512;
  d.max_regs_per_block = 4 * 512 * 64;
  d.reg_alloc_unit = 8 * 64;
  d.reg_subpartitions = 4;
  d.smem_per_sm = 64 * 1024;
  d.max_smem_per_block = 64 * 1024;
  d.smem_reserved_per_block = 0;
  d.smem_alloc_unit = 512;
  d.max_cluster_size = 0;
  d.hbm_bandwidth_gbps = 1638.4;
  return d;
}

const std::vector<CatalogEntry>& entries() {
  static const std::vector<CatalogEntry> table = {
      {"a40", nvidia("NVIDIA A40", kAmpereGa102, 84, 696)},
      {"a100", nvidia("NVIDIA A100-SXM4-80GB", kAmpereGa100, 108, 2039)},
      {"h100", nvidia("NVIDIA H100 80GB HBM3", kHopper, 132, 3350)},
      {"h200", nvidia("NVIDIA H200", kHopper, 132, 4800)},
      {"mi250x", mi250x_gcd()},
  };
  return table;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

const std::vector<DeviceLimits>& gpu_catalog() {
  static const std::vector<DeviceLimits> limits = [] {
    std::vector<DeviceLimits> all;
    for (const auto& e : entries()) all.push_back(e.limits);
    return all;
  }();
  return limits;
}

std::vector<std::string> gpu_catalog_keys() {
  std::vector<std::string> keys;
  for (const auto& e : entries()) keys.push_back(e.key);
  return keys;
}

const DeviceLimits& gpu_limits(const std::string& key) {
  const std::string wanted = lower(key);
  const auto& table = entries();
  for (size_t i = 0; i < table.size(); ++i) {
    if (wanted == table[i].key || wanted == lower(table[i].limits.name)) return gpu_catalog()[i];
  }
  TANDEM_THROW("unknown GPU '" + key + "'; known: " + join(gpu_catalog_keys(), ", "));
}

const DeviceLimits& gpu_limits_for_arch(const std::string& arch) {
  std::vector<std::string> known;
  for (const DeviceLimits& limits : gpu_catalog()) {
    if (limits.arch == arch) return limits;
    if (std::find(known.begin(), known.end(), limits.arch) == known.end()) known.push_back(limits.arch);
  }
  TANDEM_THROW("no occupancy rules for architecture '" + arch + "'; known: " + join(known, ", "));
}

KernelFootprint typical_nccl_footprint(const DeviceLimits& d) {
  // NCCL 2.28 on sm90 launches channel CTAs of 544 threads (512 workers + 1 warp), ~96 registers per
  // thread, ~82 KiB dynamic shared memory, in clusters of 4. Earlier architectures get the same CTA
  // without clusters, its shared memory capped to what the GPU allows. RCCL on gfx90a launches 256
  // threads; its registers and LDS here are rough guesses. All of these are for planning only: on a
  // real GPU tandem measures the footprint of the NCCL kernel it actually runs.
  KernelFootprint k;
  k.name = d.arch.rfind("gfx", 0) == 0 ? "rccl-approx" : "nccl-typical";
  if (d.arch.rfind("gfx", 0) == 0) {
    k.threads_per_block = 256;
    k.regs_per_thread = 128;
    k.dynamic_smem = 16 * 1024;
    k.cluster_size = 1;
    return k;
  }
  k.threads_per_block = 544;
  k.regs_per_thread = 96;
  k.static_smem = 0;
  k.dynamic_smem = std::min<int64_t>(83968, d.max_smem_per_block);
  k.cluster_size = d.max_cluster_size >= 4 ? 4 : 1;
  return k;
}

void apply_catalog_rules(DeviceLimits& d) {
  for (const auto& known : gpu_catalog()) {
    if (known.arch != d.arch) continue;
    d.reg_alloc_unit = known.reg_alloc_unit;
    d.reg_subpartitions = known.reg_subpartitions;
    d.smem_alloc_unit = known.smem_alloc_unit;
    d.max_regs_per_thread = known.max_regs_per_thread;
    d.max_cluster_size = known.max_cluster_size;
    d.hbm_bandwidth_gbps = known.hbm_bandwidth_gbps;
    if (known.name == d.name) break;  // the exact model: keep its bandwidth
  }
}

}  // namespace tandem
