// tandem::shape_padding, the padding decision ShapedKernel and the interposer share, on an H200's
// limits. Expected sizes are worked out by hand from the H200's rules: 228 KiB of shared memory per
// SM, at most 227 KiB per block, 1 KiB reserved per block, allocation in 128-byte units, 2048
// threads and 64K registers per SM.
#include <gtest/gtest.h>

#include <optional>

#include "tandem/gpu_catalog.h"
#include "tandem/policy.h"
#include "tandem/shaping.h"

namespace tandem {
namespace {

const DeviceLimits& h200() { return gpu_limits("h200"); }
ShapeTarget target(const char* text) { return parse_policy(text).shape; }

// 256 threads x 32 registers: 8 blocks per SM (2048 threads; 8 x 8192 registers).
KernelFootprint streaming_kernel(int64_t dynamic_smem = 0) {
  KernelFootprint k;
  k.threads_per_block = 256;
  k.regs_per_thread = 32;
  k.dynamic_smem = dynamic_smem;
  return k;
}

TEST(shape_padding, NoTargetKeepsTheKernelsOwnSize) {
  const ShapePadding p = shape_padding(h200(), streaming_kernel(4096), ShapeTarget{}, std::nullopt);
  EXPECT_EQ(p.outcome, PaddingOutcome::NotRequested);
  EXPECT_EQ(p.dynamic_smem, 4096);
}

TEST(shape_padding, BlocksPerSmPadsToTheLeastAllocationGivingTheTarget) {
  // 3 blocks: a 4th must not fit, so each block takes more than 233472 / 4 = 58368 B, i.e. 58496 B
  // in 128 B units, of which 1024 B are reserved: 57472 B of dynamic shared memory.
  ShapePadding p = shape_padding(h200(), streaming_kernel(), target("shape:3"), std::nullopt);
  EXPECT_EQ(p.outcome, PaddingOutcome::Padded);
  EXPECT_EQ(p.dynamic_smem, 57472);
  // 1 block: more than 233472 / 2 = 116736 -> 116864 - 1024 = 115840.
  p = shape_padding(h200(), streaming_kernel(), target("shape:1"), std::nullopt);
  EXPECT_EQ(p.outcome, PaddingOutcome::Padded);
  EXPECT_EQ(p.dynamic_smem, 115840);
}

TEST(shape_padding, BlocksPerSmAtOrAboveTheNaturalResidency) {
  ShapePadding p = shape_padding(h200(), streaming_kernel(4096), target("shape:8"), std::nullopt);
  EXPECT_EQ(p.outcome, PaddingOutcome::AtTarget);
  EXPECT_EQ(p.dynamic_smem, 4096);
  p = shape_padding(h200(), streaming_kernel(4096), target("shape:9"), std::nullopt);
  EXPECT_EQ(p.outcome, PaddingOutcome::BelowTarget);
  EXPECT_EQ(p.dynamic_smem, 4096);
}

TEST(shape_padding, BlocksPerSmBeyondThePerBlockMaximum) {
  // With at most 48 KiB per block, one block per SM (115840 B) cannot be forced.
  DeviceLimits small = h200();
  small.max_smem_per_block = 48 * 1024;
  const ShapePadding p = shape_padding(small, streaming_kernel(), target("shape:1"), std::nullopt);
  EXPECT_EQ(p.outcome, PaddingOutcome::Unreachable);
  EXPECT_EQ(p.dynamic_smem, 0);
}

TEST(shape_padding, BytesAddToTheKernelsOwnSize) {
  const ShapePadding p = shape_padding(h200(), streaming_kernel(4096), target("shape:48KiB"), std::nullopt);
  EXPECT_EQ(p.outcome, PaddingOutcome::Padded);
  EXPECT_EQ(p.dynamic_smem, 4096 + 49152);
}

TEST(shape_padding, BytesUpToExactlyThePerBlockMaximum) {
  KernelFootprint k = streaming_kernel();
  k.static_smem = 1024;
  // 1024 static + 231424 dynamic = 232448 = 227 KiB, the maximum; one byte more is refused.
  ShapePadding p = shape_padding(h200(), k, target("shape:231424B"), std::nullopt);
  EXPECT_EQ(p.outcome, PaddingOutcome::Padded);
  EXPECT_EQ(p.dynamic_smem, 231424);
  p = shape_padding(h200(), k, target("shape:231425B"), std::nullopt);
  EXPECT_EQ(p.outcome, PaddingOutcome::Unreachable);
  EXPECT_EQ(p.dynamic_smem, 0);
}

TEST(shape_padding, AutoNeedsTheCollectivesFootprint) {
  const ShapePadding p = shape_padding(h200(), streaming_kernel(512), target("shape:auto"), std::nullopt);
  EXPECT_EQ(p.outcome, PaddingOutcome::NoCollectiveFootprint);
  EXPECT_EQ(p.dynamic_smem, 512);
}

TEST(shape_padding, AutoGivesUpOneComputeBlockForACollectiveBlockOfTheSameSize) {
  // A collective CTA like the kernel's own block (256 threads, 32 registers) fits beside 7 compute
  // blocks (2048 threads, 65536 registers). 7 blocks: each takes more than 233472 / 8 = 29184 B,
  // i.e. 29312 B; 7 x 29312 + the collective's reserved 1024 B = 206208 B fit in 233472 B.
  // 29312 - 1024 reserved = 28288 B of dynamic shared memory.
  const ShapePadding p = shape_padding(h200(), streaming_kernel(), target("shape:auto"), streaming_kernel());
  EXPECT_EQ(p.outcome, PaddingOutcome::Padded);
  EXPECT_EQ(p.dynamic_smem, 28288);
}

TEST(shape_padding, AutoWhenTheCollectiveAlreadyFits) {
  // 128 threads with 50 KiB static: 51200 + 1024 = 52224 B per block, 4 blocks (208896 B); a CTA of
  // 64 threads with 1 KiB static (2048 B with the reservation) fits in the 24576 B left.
  KernelFootprint k = streaming_kernel();
  k.threads_per_block = 128;
  k.static_smem = 50 * 1024;
  KernelFootprint comm;
  comm.threads_per_block = 64;
  comm.regs_per_thread = 16;
  comm.static_smem = 1024;
  const ShapePadding p = shape_padding(h200(), k, target("shape:auto"), comm);
  EXPECT_EQ(p.outcome, PaddingOutcome::AlreadyHasRoom);
  EXPECT_EQ(p.dynamic_smem, 0);
}

TEST(shape_padding, IncompleteDeviceLimitsThrow) {
  // The callers decide what a model error means: ShapedKernel passes it on, the interposer catches it.
  DeviceLimits incomplete;
  EXPECT_ANY_THROW(shape_padding(incomplete, streaming_kernel(), target("shape:3"), std::nullopt));
}

}  // namespace
}  // namespace tandem
