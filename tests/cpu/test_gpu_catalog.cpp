// The GPU catalogue: published values, internal consistency, lookup and its error.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tandem/error.h"
#include "tandem/gpu_catalog.h"
#include "tandem/occupancy.h"

namespace tandem {
namespace {

bool is_power_of_two(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

TEST(GpuCatalog, HasTheFiveGpusInOrder) {
  EXPECT_EQ(gpu_catalog_keys(), (std::vector<std::string>{"a40", "a100", "h100", "h200", "mi250x"}));
  EXPECT_EQ(gpu_catalog().size(), 5u);
}

TEST(GpuCatalog, EveryEntryIsSelfConsistent) {
  std::set<std::string> names;
  for (const DeviceLimits& g : gpu_catalog()) {
    SCOPED_TRACE(g.name);
    EXPECT_TRUE(names.insert(g.name).second) << "duplicate name";
    EXPECT_FALSE(g.arch.empty());
    EXPECT_GT(g.sm_count, 0);
    EXPECT_EQ(g.warp_size, g.arch.rfind("gfx", 0) == 0 ? 64 : 32);
    EXPECT_EQ(g.max_threads_per_sm % g.warp_size, 0);
    EXPECT_EQ(g.max_threads_per_block % g.warp_size, 0);
    EXPECT_LE(g.max_threads_per_block, g.max_threads_per_sm);
    EXPECT_GT(g.max_blocks_per_sm, 0);
    EXPECT_LE(g.max_regs_per_block, g.regs_per_sm);
    EXPECT_GT(g.max_regs_per_thread, 0);
    EXPECT_GT(g.reg_subpartitions, 0);
    EXPECT_EQ(g.regs_per_sm % (g.reg_subpartitions * g.reg_alloc_unit), 0);
    EXPECT_EQ(g.reg_alloc_unit % g.warp_size, 0);
    EXPECT_TRUE(is_power_of_two(g.smem_alloc_unit));
    EXPECT_EQ(g.smem_per_sm % g.smem_alloc_unit, 0);
    EXPECT_LE(g.max_smem_per_block + g.smem_reserved_per_block, g.smem_per_sm);
    EXPECT_GE(g.smem_reserved_per_block, 0);
    EXPECT_GE(g.max_cluster_size, 0);
    EXPECT_GT(g.hbm_bandwidth_gbps, 0);
    // The limits are reachable: a largest block with few registers and the most shared memory runs.
    KernelFootprint biggest;
    biggest.threads_per_block = g.max_threads_per_block;
    biggest.regs_per_thread = 16;
    biggest.dynamic_smem = g.max_smem_per_block;
    EXPECT_EQ(residency(g, biggest).blocks_per_sm, 1);
    // A warp-sized block with nothing else fills the block slots.
    KernelFootprint smallest;
    smallest.threads_per_block = g.warp_size;
    smallest.regs_per_thread = 8;
    EXPECT_EQ(residency(g, smallest).blocks_per_sm, g.max_blocks_per_sm);
    // The planning default for the collective can run on the GPU.
    EXPECT_GE(residency(g, typical_nccl_footprint(g)).blocks_per_sm, 1);
    // Lookup by full name returns the same entry.
    EXPECT_EQ(&gpu_limits(g.name), &g);
  }
}

TEST(GpuCatalog, PublishedValues) {
  const DeviceLimits& h200 = gpu_limits("h200");
  EXPECT_EQ(h200.arch, "sm_90");
  EXPECT_EQ(h200.sm_count, 132);
  EXPECT_EQ(h200.smem_per_sm, 233472);
  EXPECT_EQ(h200.max_smem_per_block, 232448);
  EXPECT_EQ(h200.smem_reserved_per_block, 1024);
  EXPECT_EQ(h200.regs_per_sm, 65536);
  EXPECT_EQ(h200.max_threads_per_sm, 2048);
  EXPECT_EQ(h200.max_blocks_per_sm, 32);
  EXPECT_EQ(h200.max_cluster_size, 8);
  EXPECT_DOUBLE_EQ(h200.hbm_bandwidth_gbps, 4800);

  const DeviceLimits& h100 = gpu_limits("h100");
  EXPECT_EQ(h100.sm_count, 132);
  EXPECT_EQ(h100.smem_per_sm, 233472);
  EXPECT_DOUBLE_EQ(h100.hbm_bandwidth_gbps, 3350);

  const DeviceLimits& a100 = gpu_limits("a100");
  EXPECT_EQ(a100.arch, "sm_80");
  EXPECT_EQ(a100.sm_count, 108);
  EXPECT_EQ(a100.max_threads_per_sm, 2048);
  EXPECT_EQ(a100.max_blocks_per_sm, 32);
  EXPECT_EQ(a100.smem_per_sm, 167936);
  EXPECT_EQ(a100.max_smem_per_block, 166912);
  EXPECT_EQ(a100.max_cluster_size, 0);
  EXPECT_DOUBLE_EQ(a100.hbm_bandwidth_gbps, 2039);

  const DeviceLimits& a40 = gpu_limits("a40");
  EXPECT_EQ(a40.arch, "sm_86");
  EXPECT_EQ(a40.sm_count, 84);
  EXPECT_EQ(a40.max_threads_per_sm, 1536);
  EXPECT_EQ(a40.max_blocks_per_sm, 16);
  EXPECT_EQ(a40.smem_per_sm, 102400);
  EXPECT_EQ(a40.max_smem_per_block, 101376);

  const DeviceLimits& mi = gpu_limits("mi250x");
  EXPECT_EQ(mi.arch, "gfx90a");
  EXPECT_EQ(mi.sm_count, 110);
  EXPECT_EQ(mi.warp_size, 64);
  EXPECT_EQ(mi.smem_per_sm, 65536);
  EXPECT_EQ(mi.regs_per_sm, 131072);  // 512 KiB VGPR file per CU
  EXPECT_EQ(mi.max_threads_per_sm, 2048);
  EXPECT_EQ(mi.max_cluster_size, 0);
}

// HIP's device properties name the architecture ("gfx90a"), not the limits the model needs: the
// HIP build starts from the catalogue entry of that architecture.
TEST(GpuCatalog, LookupByArchitecture) {
  EXPECT_EQ(&gpu_limits_for_arch("gfx90a"), &gpu_limits("mi250x"));
  EXPECT_EQ(&gpu_limits_for_arch("sm_90"), &gpu_limits("h100"));  // the first entry of the architecture
  try {
    gpu_limits_for_arch("gfx942");
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "no occupancy rules for architecture 'gfx942'; known: sm_86, sm_80, sm_90, gfx90a");
  }
}

TEST(GpuCatalog, LookupIsCaseInsensitiveByKeyOrName) {
  EXPECT_EQ(gpu_limits("H200").name, "NVIDIA H200");
  EXPECT_EQ(gpu_limits("nvidia h200").name, "NVIDIA H200");
  EXPECT_EQ(gpu_limits("NVIDIA A100-SXM4-80GB").arch, "sm_80");
  EXPECT_EQ(gpu_limits("MI250X").arch, "gfx90a");
  EXPECT_EQ(&gpu_limits("h100"), &gpu_limits("NVIDIA H100 80GB HBM3"));
}

TEST(GpuCatalog, UnknownGpuThrowsListingTheKeys) {
  try {
    gpu_limits("h300");
    FAIL() << "no exception";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'h300'"), std::string::npos) << what;
    for (const auto& key : gpu_catalog_keys()) EXPECT_NE(what.find(key), std::string::npos) << key << ": " << what;
  }
  EXPECT_THROW(gpu_limits(""), Error);
}

TEST(GpuCatalog, TypicalNcclFootprint) {
  const KernelFootprint h200 = typical_nccl_footprint(gpu_limits("h200"));
  EXPECT_EQ(h200.threads_per_block, 544);
  EXPECT_EQ(h200.regs_per_thread, 96);
  EXPECT_EQ(h200.static_smem + h200.dynamic_smem, 83968);
  EXPECT_EQ(h200.cluster_size, 4);
  const KernelFootprint a100 = typical_nccl_footprint(gpu_limits("a100"));
  EXPECT_EQ(a100.threads_per_block, 544);
  EXPECT_EQ(a100.cluster_size, 1);
  EXPECT_EQ(a100.dynamic_smem, 83968);
  const KernelFootprint a40 = typical_nccl_footprint(gpu_limits("a40"));
  EXPECT_EQ(a40.cluster_size, 1);
  EXPECT_LE(a40.static_smem + a40.dynamic_smem, gpu_limits("a40").max_smem_per_block);
  // One NCCL-like CTA per SM on sm_90: 17 warps x 3072 registers use 5 of 5 warp slots in one
  // subpartition's register budget.
  EXPECT_EQ(residency(gpu_limits("h200"), h200).blocks_per_sm, 1);
}

}  // namespace
}  // namespace tandem

TEST(GpuCatalog, CatalogRulesFillWhatTheDriverDoesNotReport) {
  tandem::DeviceLimits d;
  d.name = "NVIDIA H200";
  d.arch = "sm_90";
  d.reg_alloc_unit = 0;
  d.smem_alloc_unit = 0;
  tandem::apply_catalog_rules(d);
  const auto& h200 = tandem::gpu_limits("h200");
  EXPECT_EQ(d.reg_alloc_unit, h200.reg_alloc_unit);
  EXPECT_EQ(d.smem_alloc_unit, h200.smem_alloc_unit);
  EXPECT_EQ(d.reg_subpartitions, h200.reg_subpartitions);
  EXPECT_DOUBLE_EQ(d.hbm_bandwidth_gbps, h200.hbm_bandwidth_gbps);  // the exact model's bandwidth
  tandem::DeviceLimits unknown;
  unknown.arch = "sm_120";
  unknown.reg_alloc_unit = 7;
  tandem::apply_catalog_rules(unknown);
  EXPECT_EQ(unknown.reg_alloc_unit, 7);  // no entry for the architecture: left as read
}
