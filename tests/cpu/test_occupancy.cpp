// The occupancy model against hand-computed cases from the CUDA occupancy rules (per-warp register
// allocation in units of 256 from 4 subpartitions, shared memory rounded to 128 bytes with 1 KiB
// reserved per block, warp and block-slot limits), for sm_80, sm_86 and sm_90, plus the shaping
// functions built on it. Every expected number below is worked out in the comment next to it.
#include <gtest/gtest.h>

#include <vector>

#include "tandem/error.h"
#include "tandem/gpu_catalog.h"
#include "tandem/occupancy.h"

namespace tandem {
namespace {

const DeviceLimits& h200() { return gpu_limits("h200"); }
const DeviceLimits& a100() { return gpu_limits("a100"); }
const DeviceLimits& a40() { return gpu_limits("a40"); }

KernelFootprint fp(int threads, int regs, int64_t dynamic_smem = 0, int64_t static_smem = 0, int cluster = 1) {
  KernelFootprint k;
  k.threads_per_block = threads;
  k.regs_per_thread = regs;
  k.dynamic_smem = dynamic_smem;
  k.static_smem = static_smem;
  k.cluster_size = cluster;
  return k;
}

KernelFootprint with_dynamic(KernelFootprint k, int64_t dynamic) {
  k.dynamic_smem = dynamic;
  return k;
}

// NCCL-like channel CTA: 544 threads, 82 KiB dynamic shared memory.
KernelFootprint nccl_like(int regs) { return fp(544, regs, 83968, 0, 4); }

// ---------------------------------------------------------------- residency: published limits

TEST(Residency, ThreadsLimitSm90TiesWithRegistersAndReportsThreads) {
  // 256 threads = 8 warps; 64 warps/SM -> 8 blocks. Registers: 32*32 = 1024/warp, 16384/1024 = 16
  // warps per subpartition -> 64 warps -> 8 blocks too; ties report threads.
  const Residency r = residency(h200(), fp(256, 32));
  EXPECT_EQ(r.blocks_per_sm, 8);
  EXPECT_EQ(r.limiter, Limiter::Threads);
  EXPECT_EQ(r.threads_used, 2048);
  EXPECT_EQ(r.regs_used, 8 * 8 * 1024);
  EXPECT_EQ(r.smem_used, 8 * 1024);  // only the reserved 1 KiB per block
  EXPECT_DOUBLE_EQ(r.warp_occupancy, 1.0);
}

TEST(Residency, RegistersLimit1024Threads64Regs) {
  // 64*32 = 2048 regs/warp -> 8 warps per subpartition -> 32 warps = 1 block of 32 warps
  // (threads alone would allow 2).
  const Residency r = residency(h200(), fp(1024, 64));
  EXPECT_EQ(r.blocks_per_sm, 1);
  EXPECT_EQ(r.limiter, Limiter::Registers);
  EXPECT_EQ(r.regs_used, 65536);
  EXPECT_DOUBLE_EQ(r.warp_occupancy, 0.5);
}

TEST(Residency, ThreadsLimitSm86Has1536Threads) {
  // 48 warps / 8 = 6 blocks (sm_80 would give 8).
  const Residency r = residency(a40(), fp(256, 32));
  EXPECT_EQ(r.blocks_per_sm, 6);
  EXPECT_EQ(r.limiter, Limiter::Threads);
  EXPECT_EQ(residency(a100(), fp(256, 32)).blocks_per_sm, 8);
}

TEST(Residency, BlockSlotLimit) {
  // sm_86: 64 threads = 2 warps, 48/2 = 24 by threads, but only 16 block slots.
  Residency r = residency(a40(), fp(64, 16));
  EXPECT_EQ(r.blocks_per_sm, 16);
  EXPECT_EQ(r.limiter, Limiter::Blocks);
  // sm_90: 32 threads -> 64 blocks by warps, 32 slots.
  r = residency(h200(), fp(32, 16));
  EXPECT_EQ(r.blocks_per_sm, 32);
  EXPECT_EQ(r.limiter, Limiter::Blocks);
  EXPECT_DOUBLE_EQ(r.warp_occupancy, 0.5);
}

TEST(Residency, SharedMemoryLimitPerArchitecture) {
  // 48 KiB dynamic + 1 KiB reserved = 50176 B per block.
  const KernelFootprint k = fp(128, 32, 48 * 1024);
  EXPECT_EQ(residency(h200(), k).blocks_per_sm, 4);  // 233472 / 50176 = 4.65
  EXPECT_EQ(residency(a100(), k).blocks_per_sm, 3);  // 167936 / 50176 = 3.35
  EXPECT_EQ(residency(a40(), k).blocks_per_sm, 2);   // 102400 / 50176 = 2.04
  EXPECT_EQ(residency(h200(), k).limiter, Limiter::SharedMemory);
  EXPECT_EQ(residency(h200(), k).smem_used, 4 * 50176);
}

TEST(Residency, SharedMemoryRoundsToUnitAndIncludesReservation) {
  // 76800 + 1024 = 77824 = 233472 / 3 exactly: 3 blocks; one byte more rounds to 77952: 2 blocks.
  EXPECT_EQ(residency(h200(), fp(128, 32, 76800)).blocks_per_sm, 3);
  EXPECT_EQ(residency(h200(), fp(128, 32, 76801)).blocks_per_sm, 2);
  // Static and dynamic count alike: 40004 static + 36796 dynamic = 76800.
  EXPECT_EQ(residency(h200(), fp(128, 32, 36796, 40004)).blocks_per_sm, 3);
  EXPECT_EQ(residency(h200(), fp(128, 32, 36797, 40004)).blocks_per_sm, 2);
  EXPECT_EQ(smem_per_block(h200(), fp(128, 32, 1)), 1152);  // 1 + 1024 -> 1152
  EXPECT_EQ(smem_per_block(h200(), fp(128, 32, 0)), 1024);
}

TEST(Residency, RegisterAllocationIsRoundedPerWarp) {
  // 33 regs: 33*32 = 1056 -> 1280 per warp; 16384 / 1280 = 12 warps per subpartition -> 48 warps
  // -> 6 blocks of 8 warps. Without rounding it would be 65536 / (33*256) = 7.
  const Residency r = residency(h200(), fp(256, 33));
  EXPECT_EQ(r.blocks_per_sm, 6);
  EXPECT_EQ(r.limiter, Limiter::Registers);
  EXPECT_EQ(regs_per_block(h200(), fp(256, 33)), 8 * 1280);
}

TEST(Residency, RegistersComeFromSubpartitions) {
  // 80 regs: 2560 per warp; 16384 / 2560 = 6 warps per subpartition -> 24 warps per SM -> 4 blocks
  // of 5 warps. Pooling the whole file would give 65536 / 2560 = 25 warps -> 5 blocks.
  const Residency r = residency(h200(), fp(160, 80));
  EXPECT_EQ(r.blocks_per_sm, 4);
  EXPECT_EQ(r.limiter, Limiter::Registers);
}

TEST(Residency, PartialWarpsCountAsWholeWarps) {
  // 200 threads = 7 warps: 64 / 7 = 9 blocks by warps; registers 16: 512/warp -> 32 per
  // subpartition -> 128 warps -> 18 blocks.
  const Residency r = residency(h200(), fp(200, 16));
  EXPECT_EQ(r.blocks_per_sm, 9);
  EXPECT_EQ(r.limiter, Limiter::Threads);
  EXPECT_EQ(r.threads_used, 9 * 200);
  EXPECT_DOUBLE_EQ(r.warp_occupancy, 63.0 / 64.0);
}

TEST(Residency, MaxRegistersPerThread) {
  // 255 regs: 8160 -> 8192 per warp; 2 warps per subpartition -> 8 warps -> one 256-thread block.
  EXPECT_EQ(residency(h200(), fp(256, 255)).blocks_per_sm, 1);
  // 288 threads at 255 regs need 9 warps > 8.
  EXPECT_EQ(residency(h200(), fp(288, 255)).blocks_per_sm, 0);
  EXPECT_EQ(residency(h200(), fp(288, 255)).limiter, Limiter::Registers);
  // 256 registers per thread can never be assigned.
  EXPECT_EQ(residency(h200(), fp(32, 256)).blocks_per_sm, 0);
  EXPECT_EQ(residency(h200(), fp(32, 256)).limiter, Limiter::Registers);
}

TEST(Residency, BlockRegisterCheckRoundsWarpsToSubpartitions) {
  // 992 threads = 31 warps at 64 regs: 32 warps * 2048 = 65536 fits; at 65 regs (2304/warp) not.
  EXPECT_EQ(residency(h200(), fp(992, 64)).blocks_per_sm, 1);
  EXPECT_EQ(residency(h200(), fp(992, 65)).blocks_per_sm, 0);
  EXPECT_EQ(residency(h200(), fp(992, 65)).limiter, Limiter::Registers);
}

// Where the per-block register limit equals the SM's register file (every NVIDIA GPU catalogued),
// the rounding never decides: warps rounded up to a multiple of 4 that exceed 64 K registers also
// exceed what 4 subpartitions of 16 K hold. It does decide when a block may hold less than the SM
// (32 K per block, 64 K per SM, as on sm_53 and sm_62): 160 threads = 5 warps at 192 registers,
// 192 x 32 = 6144 registers per warp (a multiple of 256). 5 warps take 30720 <= 32768, but the
// launch check counts 8 warps: 49152 > 32768, so no block can launch. (Counting 5, the SM would
// hold 16384 / 6144 = 2 warps per subpartition = 8 warps = 1 block.)
TEST(Residency, BlockRegisterCheckRoundingDecidesBelowTheSmLimit) {
  DeviceLimits d = h200();
  d.max_regs_per_block = 32768;
  const Residency r = residency(d, fp(160, 192));
  EXPECT_EQ(r.blocks_per_sm, 0);
  EXPECT_EQ(r.limiter, Limiter::Registers);
  // 4 warps (128 threads) need no rounding: 4 x 6144 = 24576 <= 32768; 8 warps per SM / 4 = 2 blocks.
  EXPECT_EQ(residency(d, fp(128, 192)).blocks_per_sm, 2);
}

// 800 threads = 25 warps at 80 registers: 2560 per warp; a 16 K subpartition holds 6 such warps,
// the SM 24 < 25, so not one block (the rounded launch check, 28 x 2560 = 71680 > 65536, agrees).
TEST(Residency, TwentyFiveWarpsOfEightyRegistersDoNotFit) {
  EXPECT_EQ(residency(h200(), fp(800, 80)).blocks_per_sm, 0);
  EXPECT_EQ(residency(h200(), fp(800, 80)).limiter, Limiter::Registers);
}

// Threads, registers and shared memory all allow exactly 2 blocks: 1024 threads of 2048; 32 warps
// of 1024 registers against 4 x 16 warps; 100 KiB + 1 KiB reserved = 103424 B (a multiple of 128)
// against 233472 B = 2.26 blocks. Ties report the first resource, threads.
TEST(Residency, ThreeWayTieReportsThreads) {
  const Residency r = residency(h200(), fp(1024, 32, 100 * 1024));
  EXPECT_EQ(r.blocks_per_sm, 2);
  EXPECT_EQ(r.limiter, Limiter::Threads);
  // One unit more shared memory than a third of the SM (233472 / 3 = 77824) still gives 2 blocks,
  // now set by shared memory alone: 77952 - 1024 reserved = 76928 B dynamic, at 256 threads.
  const Residency s = residency(h200(), fp(256, 32, 76928));
  EXPECT_EQ(s.blocks_per_sm, 2);
  EXPECT_EQ(s.limiter, Limiter::SharedMemory);
}

TEST(Residency, InvalidFootprintsGiveZeroWithTheLimiter) {
  EXPECT_EQ(residency(h200(), fp(1025, 16)).blocks_per_sm, 0);
  EXPECT_EQ(residency(h200(), fp(1025, 16)).limiter, Limiter::Threads);
  EXPECT_EQ(residency(h200(), fp(0, 16)).limiter, Limiter::Threads);
  EXPECT_EQ(residency(h200(), fp(-5, 16)).limiter, Limiter::Threads);
  EXPECT_EQ(residency(h200(), fp(128, -1)).limiter, Limiter::Registers);
  // Per-block shared memory maximum: 232448 static + dynamic on sm_90, 101376 on sm_86.
  EXPECT_EQ(residency(h200(), fp(128, 32, 232448)).blocks_per_sm, 1);
  EXPECT_EQ(residency(h200(), fp(128, 32, 232449)).blocks_per_sm, 0);
  EXPECT_EQ(residency(h200(), fp(128, 32, 232449)).limiter, Limiter::SharedMemory);
  EXPECT_EQ(residency(h200(), fp(128, 32, 232000, 1000)).blocks_per_sm, 0);
  EXPECT_EQ(residency(a40(), fp(128, 32, 101376)).blocks_per_sm, 1);
  EXPECT_EQ(residency(a40(), fp(128, 32, 101377)).blocks_per_sm, 0);
  EXPECT_EQ(residency(h200(), fp(128, 32, -1)).limiter, Limiter::SharedMemory);
  const Residency zero = residency(h200(), fp(1025, 16));
  EXPECT_EQ(zero.threads_used, 0);
  EXPECT_EQ(zero.warp_occupancy, 0.0);
}

TEST(Residency, ClustersAreLimitedPerSmLikeBlocks) {
  EXPECT_EQ(residency(h200(), fp(256, 32, 0, 0, 4)).blocks_per_sm, 8);
  EXPECT_EQ(residency(h200(), fp(256, 32, 0, 0, 8)).blocks_per_sm, 8);
  // Above the portable cluster size, or any cluster on a GPU without clusters: cannot launch.
  EXPECT_EQ(residency(h200(), fp(256, 32, 0, 0, 16)).blocks_per_sm, 0);
  EXPECT_EQ(residency(a100(), fp(256, 32, 0, 0, 2)).blocks_per_sm, 0);
  EXPECT_EQ(residency(a100(), fp(256, 32, 0, 0, 2)).limiter, Limiter::Blocks);
  EXPECT_EQ(residency(h200(), fp(256, 32, 0, 0, 0)).blocks_per_sm, 0);
}

TEST(Residency, Mi250xWavefronts) {
  // 256 threads = 4 wavefronts of 64; 128 VGPRs: 128*64 = 8192 per wave; 32768 per SIMD -> 4 waves
  // per SIMD -> 16 per CU -> 4 blocks (threads would allow 8).
  const DeviceLimits& mi = gpu_limits("mi250x");
  Residency r = residency(mi, fp(256, 128));
  EXPECT_EQ(r.blocks_per_sm, 4);
  EXPECT_EQ(r.limiter, Limiter::Registers);
  // 16 KiB LDS: 65536 / 16384 = 4; 16 KiB + 1 rounds to 16896 (512-byte granules): 3.
  EXPECT_EQ(residency(mi, fp(64, 16, 16384)).blocks_per_sm, 4);
  EXPECT_EQ(residency(mi, fp(64, 16, 16385)).blocks_per_sm, 3);
  // 64-thread blocks: 32 waves allow 32 blocks, 16 workgroup slots.
  r = residency(mi, fp(64, 16));
  EXPECT_EQ(r.blocks_per_sm, 16);
  EXPECT_EQ(r.limiter, Limiter::Blocks);
}

TEST(Residency, IncompleteDeviceLimitsThrow) {
  DeviceLimits broken = h200();
  broken.regs_per_sm = 0;
  EXPECT_THROW(residency(broken, fp(256, 32)), Error);
}

// Found by tests/fuzz/fuzz_occupancy: an SM with fewer threads than a warp has no warp slot, and the
// warp occupancy came out 0/0 = NaN instead of an error.
TEST(Residency, LimitsWithoutAWholeWarpPerSmThrow) {
  DeviceLimits broken = h200();
  broken.warp_size = 64;
  broken.max_threads_per_sm = 2;
  EXPECT_THROW(residency(broken, fp(256, 32)), Error);
  broken.max_threads_per_sm = 64;  // one warp slot: a valid, if tiny, SM
  EXPECT_EQ(residency(broken, fp(64, 32)).blocks_per_sm, 1);
}

// Found by tests/fuzz/fuzz_occupancy: with a per-thread register maximum no register file could
// hold (2^24 registers x 4096-thread warps), a warp's registers overflowed the model's int and a
// footprint of 2^20 registers per thread came out resident.
TEST(Residency, LimitsWhoseRegisterMaximumExceedsTheRegisterFileThrow) {
  DeviceLimits broken = h200();
  broken.warp_size = 4096;
  broken.max_threads_per_sm = 16384;
  broken.max_threads_per_block = 4096;
  broken.max_regs_per_thread = 1 << 24;
  EXPECT_THROW(residency(broken, fp(4096, 1 << 20)), Error);
  // Every catalogue GPU keeps a warp at its register maximum within its register file.
  for (const DeviceLimits& gpu : gpu_catalog()) EXPECT_NO_THROW(residency(gpu, fp(256, 32))) << gpu.name;
}

// ---------------------------------------------------------------- dynamic_smem_for_target

TEST(DynamicSmemForTarget, HandComputedPaddings) {
  // 256x32 on sm_90 (natural 8): target b needs an allocation above 233472 / (b+1), rounded up to
  // 128, minus the reserved 1 KiB. b=3: > 58368 -> 58496 -> 57472. b=1: > 116736 -> 116864 -> 115840.
  EXPECT_EQ(dynamic_smem_for_target(h200(), fp(256, 32), 3), 57472);
  EXPECT_EQ(dynamic_smem_for_target(h200(), fp(256, 32), 1), 115840);
  EXPECT_EQ(dynamic_smem_for_target(h200(), fp(256, 32), 7), 28288);  // > 29184 -> 29312
  // Natural level: no padding beyond what the kernel already has.
  EXPECT_EQ(dynamic_smem_for_target(h200(), fp(256, 32), 8), 0);
  EXPECT_EQ(dynamic_smem_for_target(h200(), fp(256, 32, 4096), 8), 4096);
  // Static shared memory is part of the allocation: 40004 static, target 2: > 77824 -> 77952
  // -> 77952 - 1024 - 40004 = 36924.
  EXPECT_EQ(dynamic_smem_for_target(h200(), fp(128, 32, 0, 40004), 2), 36924);
}

TEST(DynamicSmemForTarget, Unreachable) {
  EXPECT_EQ(dynamic_smem_for_target(h200(), fp(256, 32), 9), std::nullopt);  // more than natural
  EXPECT_EQ(dynamic_smem_for_target(h200(), fp(256, 32), 0), std::nullopt);
  EXPECT_EQ(dynamic_smem_for_target(h200(), fp(1025, 32), 1), std::nullopt);  // cannot run at all
  // A GPU whose per-block maximum is below the padding 1 block needs (115840 B).
  DeviceLimits small_blocks = h200();
  small_blocks.max_smem_per_block = 100000;
  EXPECT_EQ(dynamic_smem_for_target(small_blocks, fp(256, 32), 1), std::nullopt);
  EXPECT_EQ(dynamic_smem_for_target(small_blocks, fp(256, 32), 2), 76928);
}

TEST(DynamicSmemForTarget, ReachesExactlyTheTargetWithTheLeastPadding) {
  // Every reachable level, for a spread of footprints on every catalogue GPU: the padding gives
  // exactly the target, and one allocation unit less gives more blocks.
  const std::vector<KernelFootprint> kernels = {fp(32, 16),        fp(64, 32),        fp(128, 32),          fp(256, 32),
                                                fp(256, 64),       fp(200, 40, 1000), fp(96, 24, 0, 40004), fp(512, 32),
                                                fp(128, 80, 4096), fp(1024, 32)};
  int checked = 0;
  for (const DeviceLimits& gpu : gpu_catalog()) {
    for (const KernelFootprint& k : kernels) {
      const int natural = residency(gpu, k).blocks_per_sm;
      for (int b = natural; b >= 1; --b) {
        const auto padding = dynamic_smem_for_target(gpu, k, b);
        if (!padding) continue;
        ++checked;
        EXPECT_EQ(residency(gpu, with_dynamic(k, *padding)).blocks_per_sm, b) << gpu.name << " b=" << b;
        if (b < natural) {
          // The padding fills its allocation unit: one byte less lands in the same unit, one unit
          // less in the previous one, which holds more blocks.
          EXPECT_EQ((k.static_smem + *padding + gpu.smem_reserved_per_block) % gpu.smem_alloc_unit, 0);
          EXPECT_EQ(residency(gpu, with_dynamic(k, *padding - 1)).blocks_per_sm, b) << gpu.name << " b=" << b;
          ASSERT_GE(*padding, gpu.smem_alloc_unit);
          EXPECT_GT(residency(gpu, with_dynamic(k, *padding - gpu.smem_alloc_unit)).blocks_per_sm, b)
              << gpu.name << " b=" << b;
        } else {
          EXPECT_EQ(*padding, k.dynamic_smem);
        }
      }
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(DynamicSmemForTarget, RoomForNarrowsTheWindow) {
  // Comm block of 64 threads x 32 regs with 30000 B static smem: 31104 B allocated. For target b the
  // compute allocation must lie in (233472/(b+1), (233472 - 31104)/b].
  const KernelFootprint comm = fp(64, 32, 0, 30000);
  // b=4: (46694.4, 50592] -> 46720 -> 45696, same as without room.
  EXPECT_EQ(dynamic_smem_for_target(h200(), fp(256, 32), 4, comm), 45696);
  // b=7: (29184, 28909] is empty, although 7 alone is reachable.
  EXPECT_EQ(dynamic_smem_for_target(h200(), fp(256, 32), 7), 28288);
  EXPECT_EQ(dynamic_smem_for_target(h200(), fp(256, 32), 7, comm), std::nullopt);
  // b=6: (33353, 33728] -> 33408 -> 32384.
  EXPECT_EQ(dynamic_smem_for_target(h200(), fp(256, 32), 6, comm), 32384);
  // An NCCL-like CTA with 82 KiB: only b=1 leaves a window: (116736, 148480].
  EXPECT_EQ(dynamic_smem_for_target(h200(), fp(256, 32), 2, nccl_like(64)), std::nullopt);
  EXPECT_EQ(dynamic_smem_for_target(h200(), fp(256, 32), 1, nccl_like(64)), 115840);
  // Room that shared memory cannot make (threads: 8 blocks x 8 warps already fill 64 warps).
  EXPECT_EQ(dynamic_smem_for_target(h200(), fp(256, 32), 8, fp(32, 16)), std::nullopt);
}

// ---------------------------------------------------------------- fits_beside

TEST(FitsBeside, AgreesWithResidencyForIdenticalBlocks) {
  const std::vector<KernelFootprint> kernels = {fp(32, 16),   fp(96, 168), fp(128, 32, 48 * 1024),
                                                fp(160, 80),  fp(256, 33), fp(200, 16),
                                                fp(1024, 64), fp(640, 40), fp(384, 72, 20000, 40004)};
  for (const DeviceLimits& gpu : gpu_catalog()) {
    for (const KernelFootprint& k : kernels) {
      const int natural = residency(gpu, k).blocks_per_sm;
      if (natural == 0) continue;
      for (int b = 0; b < natural; ++b) EXPECT_TRUE(fits_beside(gpu, k, b, k)) << gpu.name << " b=" << b;
      EXPECT_FALSE(fits_beside(gpu, k, natural, k)) << gpu.name << " natural=" << natural;
    }
  }
}

TEST(FitsBeside, EachResource) {
  // Threads: 7 x 8 warps + 1 = 57 <= 64; 8 x 8 + 1 > 64.
  EXPECT_TRUE(fits_beside(h200(), fp(256, 16), 7, fp(32, 16)));
  EXPECT_FALSE(fits_beside(h200(), fp(256, 16), 8, fp(32, 16)));
  // Block slots: 31 + 1 = 32 fits, 32 + 1 does not.
  EXPECT_TRUE(fits_beside(h200(), fp(32, 8), 31, fp(32, 8)));
  EXPECT_FALSE(fits_beside(h200(), fp(32, 8), 32, fp(32, 8)));
  // Shared memory: 4 x 57344 + 1024 = 230400 fits in 233472; + 5120 (4000 B comm) does not.
  const KernelFootprint compute = fp(128, 32, 56320);
  EXPECT_EQ(residency(h200(), compute).blocks_per_sm, 4);
  EXPECT_TRUE(fits_beside(h200(), compute, 4, fp(32, 16)));
  EXPECT_FALSE(fits_beside(h200(), compute, 4, fp(32, 16, 4000)));
  EXPECT_TRUE(fits_beside(h200(), compute, 3, fp(32, 16, 4000)));
  // Registers: 1024x64 fills every subpartition (8 warps x 2048 each).
  EXPECT_FALSE(fits_beside(h200(), fp(1024, 64), 1, fp(32, 8)));
  EXPECT_TRUE(fits_beside(h200(), fp(1024, 64), 0, fp(32, 8)));
}

TEST(FitsBeside, RegistersPerSubpartitionNotPooled) {
  // Streaming block 256x32 padded to 1 block/SM, NCCL-like 544 threads x 96 regs: in total
  // 8192 + 17 x 3072 = 60416 <= 65536 registers, but the compute warps take 2 x 1024 in every
  // subpartition, leaving 14336 = 4 NCCL warps each: 16 < 17 warps.
  const KernelFootprint shaped = fp(256, 32, 115840);
  EXPECT_FALSE(fits_beside(h200(), shaped, 1, nccl_like(96)));
  // With 64 regs (2048/warp) the 17th NCCL warp fits: 2048 + 5 x 2048 <= 16384.
  EXPECT_TRUE(fits_beside(h200(), shaped, 1, nccl_like(64)));
  // Alone, the NCCL-like CTA fits (5 warps of 3072 per subpartition).
  EXPECT_TRUE(fits_beside(h200(), shaped, 0, nccl_like(96)));
}

TEST(FitsBeside, InvalidInputs) {
  EXPECT_FALSE(fits_beside(h200(), fp(256, 32), -1, fp(32, 16)));
  EXPECT_FALSE(fits_beside(h200(), fp(256, 32), 0, fp(2048, 16)));  // comm cannot run at all
  EXPECT_FALSE(fits_beside(h200(), fp(2048, 32), 1, fp(32, 16)));   // compute cannot run at all
}

// ---------------------------------------------------------------- least_shaping_with_room

TEST(LeastShapingWithRoom, StreamingKernelBesideNcclOnH200) {
  // 96 regs per NCCL thread: no level leaves room (registers per subpartition, see above).
  EXPECT_EQ(least_shaping_with_room(h200(), fp(256, 32), nccl_like(96)), std::nullopt);
  // 64 regs: shared memory allows only 1 block beside 82 KiB: {1, 115840}.
  const auto plan = least_shaping_with_room(h200(), fp(256, 32), nccl_like(64));
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->blocks_per_sm, 1);
  EXPECT_EQ(plan->dynamic_smem, 115840);
}

TEST(LeastShapingWithRoom, SmallCommBlock) {
  // 64x32 with 30000 B static: 8 blocks leave no warps, 7 no smem window, 6 fits with 32384 B.
  const auto plan = least_shaping_with_room(h200(), fp(256, 32), fp(64, 32, 0, 30000));
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->blocks_per_sm, 6);
  EXPECT_EQ(plan->dynamic_smem, 32384);
}

TEST(LeastShapingWithRoom, UnshapedKernelThatAlreadyLeavesRoomKeepsItsSmem) {
  // 128 threads with 56320 B dynamic: 4 blocks of 57344 B, 4096 B left; a 32-thread comm block
  // without shared memory needs 1024.
  const auto plan = least_shaping_with_room(h200(), fp(128, 32, 56320), fp(32, 32));
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->blocks_per_sm, 4);
  EXPECT_EQ(plan->dynamic_smem, 56320);
}

TEST(LeastShapingWithRoom, NoRoomForANonSharedMemoryReason) {
  // One 1024x64 block takes every register; padding cannot free any.
  EXPECT_EQ(least_shaping_with_room(h200(), fp(1024, 64), fp(32, 32)), std::nullopt);
  // A kernel that cannot run at all.
  EXPECT_EQ(least_shaping_with_room(h200(), fp(1025, 32), fp(32, 32)), std::nullopt);
}

TEST(Limiter, Names) {
  EXPECT_STREQ(to_string(Limiter::Threads), "threads");
  EXPECT_STREQ(to_string(Limiter::Blocks), "blocks");
  EXPECT_STREQ(to_string(Limiter::Registers), "registers");
  EXPECT_STREQ(to_string(Limiter::SharedMemory), "shared-memory");
  EXPECT_STREQ(to_string(Limiter::None), "none");
}

}  // namespace
}  // namespace tandem
