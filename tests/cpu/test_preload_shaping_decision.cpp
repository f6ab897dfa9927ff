// The interposer's shaping decision as a pure function: every outcome, on the H200's limits.
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>

#include "preload/shaping_decision.h"
#include "tandem/gpu_catalog.h"
#include "tandem/policy.h"

namespace tandem::preload {
namespace {

const DeviceLimits& h200() { return gpu_limits("h200"); }

ShapeTarget blocks(int n) { return parse_policy("shape:" + std::to_string(n)).shape; }
ShapeTarget bytes(const char* text) { return parse_policy(std::string("shape:") + text).shape; }
ShapeTarget automatic() { return parse_policy("shape:auto").shape; }

// 256 threads, 32 registers, no shared memory: 8 blocks/SM on an H200 (threads and registers).
KernelFootprint streaming_kernel() {
  KernelFootprint k;
  k.name = "stream";
  k.threads_per_block = 256;
  k.regs_per_thread = 32;
  return k;
}

ShapingRequest request_for(const KernelFootprint& k) {
  ShapingRequest r;
  r.kernel = k;
  return r;
}

ShapingDecision decide(const ShapeTarget& target, const ShapingRequest& r,
                       const std::optional<KernelFootprint>& nccl = std::nullopt, const DeviceLimits& limits = h200()) {
  return decide_shaping(limits, target, r, nccl);
}

int residency_with(const KernelFootprint& k, int64_t dynamic_smem) {
  KernelFootprint padded = k;
  padded.dynamic_smem = dynamic_smem;
  return residency(h200(), padded).blocks_per_sm;
}

TEST(preload_shaping_decision, NaturalResidencyOfTheTestKernel) {
  EXPECT_EQ(residency(h200(), streaming_kernel()).blocks_per_sm, 8);
}

TEST(preload_shaping_decision, NoTargetMeansNotRequested) {
  const auto d = decide(ShapeTarget{}, request_for(streaming_kernel()));
  EXPECT_EQ(d.outcome, ShapingOutcome::NotRequested);
  EXPECT_EQ(d.dynamic_smem, 0);
}

TEST(preload_shaping_decision, BlocksPerSmTargetPadsToExactlyThatResidency) {
  for (int target = 1; target < 8; ++target) {
    const auto d = decide(blocks(target), request_for(streaming_kernel()));
    ASSERT_EQ(d.outcome, ShapingOutcome::Shaped) << target;
    EXPECT_EQ(d.natural_blocks_per_sm, 8);
    EXPECT_EQ(d.shaped_blocks_per_sm, target);
    EXPECT_EQ(residency_with(streaming_kernel(), d.dynamic_smem), target);
    // The least padding: one allocation unit less would let one more block in.
    EXPECT_GT(residency_with(streaming_kernel(), d.dynamic_smem - h200().smem_alloc_unit), target);
  }
  // H200: two blocks of 76928 B dynamic + 1 KiB reserved fill 228 KiB, a third does not fit.
  EXPECT_EQ(decide(blocks(2), request_for(streaming_kernel())).dynamic_smem, 76928);
}

TEST(preload_shaping_decision, PaddingStartsFromTheLaunchsOwnDynamicSmem) {
  KernelFootprint k = streaming_kernel();
  k.dynamic_smem = 4096;
  const auto d = decide(blocks(4), request_for(k));
  ASSERT_EQ(d.outcome, ShapingOutcome::Shaped);
  EXPECT_GE(d.dynamic_smem, 4096);
  EXPECT_EQ(residency_with(k, d.dynamic_smem), 4);
}

TEST(preload_shaping_decision, AtOrBelowTargetIsLeftAlone) {
  EXPECT_EQ(decide(blocks(8), request_for(streaming_kernel())).outcome, ShapingOutcome::AlreadyAtTarget);
  const auto d = decide(blocks(16), request_for(streaming_kernel()));
  EXPECT_EQ(d.outcome, ShapingOutcome::AlreadyAtTarget);
  EXPECT_EQ(d.natural_blocks_per_sm, 8);
  EXPECT_EQ(d.dynamic_smem, 0);
}

TEST(preload_shaping_decision, BytesTargetAddsToTheLaunch) {
  KernelFootprint k = streaming_kernel();
  k.dynamic_smem = 1000;
  const auto d = decide(bytes("48KiB"), request_for(k));
  ASSERT_EQ(d.outcome, ShapingOutcome::Shaped);
  EXPECT_EQ(d.dynamic_smem, 1000 + 48 * 1024);
  EXPECT_EQ(d.shaped_blocks_per_sm, 4);
  // Too little to change anything.
  EXPECT_EQ(decide(bytes("1KiB"), request_for(streaming_kernel())).outcome, ShapingOutcome::AlreadyAtTarget);
  // More than a block may have.
  EXPECT_EQ(decide(bytes("300KiB"), request_for(streaming_kernel())).outcome, ShapingOutcome::Unreachable);
}

// The H200's per-block limit is 227 KiB = 232448 B: a padding landing exactly on it is allowed (one
// block per SM: 232448 + 1 KiB reserved = 228 KiB, the whole SM), one byte more is not.
TEST(preload_shaping_decision, BytesTargetExactlyAtThePerBlockLimit) {
  const auto at_limit = decide(bytes("232448B"), request_for(streaming_kernel()));
  ASSERT_EQ(at_limit.outcome, ShapingOutcome::Shaped);
  EXPECT_EQ(at_limit.dynamic_smem, 232448);
  EXPECT_EQ(at_limit.shaped_blocks_per_sm, 1);
  EXPECT_EQ(decide(bytes("232449B"), request_for(streaming_kernel())).outcome, ShapingOutcome::Unreachable);
  // The launch's own 1 KiB counts toward the limit: 1024 + 231424 = 232448 is allowed, + 1 is not.
  KernelFootprint k = streaming_kernel();
  k.dynamic_smem = 1024;
  EXPECT_EQ(decide(bytes("226KiB"), request_for(k)).outcome, ShapingOutcome::Shaped);
  EXPECT_EQ(decide(bytes("231425B"), request_for(k)).outcome, ShapingOutcome::Unreachable);
  // Static shared memory counts too.
  k.dynamic_smem = 0;
  k.static_smem = 2048;
  EXPECT_EQ(decide(bytes("230400B"), request_for(k)).outcome, ShapingOutcome::Shaped);
  EXPECT_EQ(decide(bytes("230401B"), request_for(k)).outcome, ShapingOutcome::Unreachable);
}

TEST(preload_shaping_decision, AutoNeedsAnNcclFootprint) {
  EXPECT_EQ(decide(automatic(), request_for(streaming_kernel())).outcome, ShapingOutcome::NoNcclFootprint);
}

// A collective CTA of 512 threads, 32 registers, 16 KiB shared memory: the streaming kernel must
// drop from 8 to 6 blocks/SM for one to fit beside it.
KernelFootprint lean_collective() {
  KernelFootprint c;
  c.threads_per_block = 512;
  c.regs_per_thread = 32;
  c.dynamic_smem = 16 * 1024;
  return c;
}

// By hand: k blocks of 8 warps beside the collective's 16 need 8k + 16 <= 64 warps, so k <= 6
// (registers agree: 2k warps of 1024 per 16 K subpartition leave room for 4 of its warps while
// k <= 6). The least padding for 6 blocks is an allocation above 233472 / 7 = 33353.1 B, i.e.
// 33408 B (261 units of 128), less the 1 KiB reserved: 32384 B; 6 x 33408 + 17408 = 217856 B of
// shared memory fits in 233472.
TEST(preload_shaping_decision, AutoLeavesRoomForTheCollective) {
  const KernelFootprint nccl = lean_collective();
  const auto d = decide(automatic(), request_for(streaming_kernel()), nccl);
  ASSERT_EQ(d.outcome, ShapingOutcome::Shaped);
  EXPECT_EQ(d.shaped_blocks_per_sm, 6);
  EXPECT_EQ(d.dynamic_smem, 32384);
  KernelFootprint shaped = streaming_kernel();
  shaped.dynamic_smem = d.dynamic_smem;
  EXPECT_TRUE(fits_beside(h200(), shaped, d.shaped_blocks_per_sm, nccl));
  EXPECT_FALSE(fits_beside(h200(), streaming_kernel(), 8, nccl));
}

TEST(preload_shaping_decision, AutoCannotMakeRoomForAFullSizeNcclCta) {
  // NCCL 2.28's sm90 CTA (544 threads x 96 registers, ~82 KiB): no padding of this kernel leaves
  // room for it, since the padding itself takes the shared memory the CTA needs.
  const KernelFootprint nccl = typical_nccl_footprint(h200());
  ASSERT_FALSE(least_shaping_with_room(h200(), streaming_kernel(), nccl));
  EXPECT_EQ(decide(automatic(), request_for(streaming_kernel()), nccl).outcome, ShapingOutcome::Unreachable);
}

TEST(preload_shaping_decision, AutoWhenTheCollectiveAlreadyFits) {
  // Shared memory limits this kernel to 4 blocks (50 KiB static each); a small collective CTA fits
  // in what is left.
  KernelFootprint k = streaming_kernel();
  k.threads_per_block = 128;
  k.static_smem = 50 * 1024;
  KernelFootprint small_comm;
  small_comm.threads_per_block = 64;
  small_comm.regs_per_thread = 16;
  small_comm.static_smem = 1024;
  ASSERT_EQ(residency(h200(), k).blocks_per_sm, 4);
  ASSERT_TRUE(fits_beside(h200(), k, 4, small_comm));
  const auto d = decide(automatic(), request_for(k), small_comm);
  EXPECT_EQ(d.outcome, ShapingOutcome::AlreadyHasRoom);
  EXPECT_EQ(d.dynamic_smem, 0);
}

TEST(preload_shaping_decision, OneBlockPerSmCannotBeShaped) {
  KernelFootprint persistent = streaming_kernel();
  persistent.static_smem = 200 * 1024;
  ASSERT_EQ(residency(h200(), persistent).blocks_per_sm, 1);
  for (const auto& target : {blocks(1), blocks(2), bytes("4KiB"), automatic()}) {
    const auto d = decide(target, request_for(persistent), typical_nccl_footprint(h200()));
    EXPECT_EQ(d.outcome, ShapingOutcome::OneBlockPerSm);
    EXPECT_EQ(d.natural_blocks_per_sm, 1);
  }
}

TEST(preload_shaping_decision, UnreachableTargets) {
  // A launch the device rejects as it stands (too many threads) is passed through unchanged.
  KernelFootprint invalid = streaming_kernel();
  invalid.threads_per_block = 2048;
  const auto d = decide(blocks(2), request_for(invalid));
  EXPECT_EQ(d.outcome, ShapingOutcome::Unreachable);
  EXPECT_EQ(d.natural_blocks_per_sm, 0);
  // A GPU whose per-block maximum is too small for the padding that 2 blocks/SM would need.
  DeviceLimits small_blocks = h200();
  small_blocks.max_smem_per_block = 48 * 1024;
  EXPECT_EQ(decide(blocks(2), request_for(streaming_kernel()), std::nullopt, small_blocks).outcome,
            ShapingOutcome::Unreachable);
}

TEST(preload_shaping_decision, ClusterLaunchesAreShapedOnlyIfAWholeClusterStillFitsOnOneSm) {
  KernelFootprint clustered = streaming_kernel();
  clustered.cluster_size = 4;
  const auto too_few = decide(blocks(2), request_for(clustered));
  EXPECT_EQ(too_few.outcome, ShapingOutcome::Cluster);
  EXPECT_EQ(too_few.dynamic_smem, 0);
  EXPECT_EQ(decide(blocks(4), request_for(clustered)).outcome, ShapingOutcome::Shaped);
  clustered.cluster_size = 2;
  EXPECT_EQ(decide(blocks(2), request_for(clustered)).outcome, ShapingOutcome::Shaped);
}

TEST(preload_shaping_decision, FlagsDecideBeforeTheModel) {
  ShapingRequest r = request_for(streaming_kernel());
  r.cooperative = true;
  EXPECT_TRUE(decided_before_model(blocks(2), r));
  EXPECT_EQ(decide(blocks(2), r).outcome, ShapingOutcome::Cooperative);

  r = request_for(streaming_kernel());
  r.excluded = true;
  EXPECT_EQ(decide(blocks(2), r).outcome, ShapingOutcome::Excluded);

  r = request_for(streaming_kernel());
  r.failed_before = true;
  EXPECT_EQ(decide(blocks(2), r).outcome, ShapingOutcome::FailedRetry);

  r = request_for(streaming_kernel());
  r.collective_in_flight = false;
  EXPECT_EQ(decide(blocks(2), r).outcome, ShapingOutcome::NoCollectiveInFlight);

  EXPECT_FALSE(decided_before_model(blocks(2), request_for(streaming_kernel())));
  EXPECT_TRUE(decided_before_model(ShapeTarget{}, request_for(streaming_kernel())));
}

TEST(preload_shaping_decision, FlagPrecedence) {
  ShapingRequest r = request_for(streaming_kernel());
  r.excluded = r.failed_before = r.cooperative = true;
  r.collective_in_flight = false;
  EXPECT_EQ(decide(blocks(2), r).outcome, ShapingOutcome::Excluded);
  r.excluded = false;
  EXPECT_EQ(decide(blocks(2), r).outcome, ShapingOutcome::FailedRetry);
  r.failed_before = false;
  EXPECT_EQ(decide(blocks(2), r).outcome, ShapingOutcome::Cooperative);
  r.cooperative = false;
  EXPECT_EQ(decide(blocks(2), r).outcome, ShapingOutcome::NoCollectiveInFlight);
  // No target beats every flag: nothing was asked for.
  EXPECT_EQ(decide(ShapeTarget{}, r).outcome, ShapingOutcome::NotRequested);
}

TEST(preload_shaping_decision, IncompleteDeviceLimitsNeverThrow) {
  const auto d = decide(blocks(2), request_for(streaming_kernel()), std::nullopt, DeviceLimits{});
  EXPECT_EQ(d.outcome, ShapingOutcome::ModelError);
  EXPECT_EQ(d.dynamic_smem, 0);
}

TEST(preload_shaping_decision, EveryOutcomeHasADistinctName) {
  std::set<std::string> names;
  for (int i = 0; i < kShapingOutcomeCount; ++i) {
    const std::string name = to_string(static_cast<ShapingOutcome>(i));
    EXPECT_NE(name, "unknown");
    EXPECT_TRUE(names.insert(name).second) << name;
  }
}

}  // namespace
}  // namespace tandem::preload
