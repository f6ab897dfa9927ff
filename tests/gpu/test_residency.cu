// The residency a shaped launch actually reaches, counted on the device with %smid, equals what the
// occupancy model predicts and what the runtime's calculator says.
#include <gtest/gtest.h>

#include "gpu_test_util.h"
#include "tandem/cuda_check.h"
#include "tandem/device.h"
#include "tandem/residency_probe.h"
#include "tandem/shaped_kernel.h"

namespace {

struct ProbeCase {
  int threads;
  int target_blocks;  // 0: unshaped
};

class ResidencyTest : public ::testing::TestWithParam<ProbeCase> {};

TEST_P(ResidencyTest, ShapedLaunchReachesModelResidency) {
  TANDEM_REQUIRE_GPUS(1);
  const ProbeCase c = GetParam();
  TANDEM_CUDA_CHECK(cudaSetDevice(0));
  tandem::ResidencyProbe probe(0);
  tandem::ShapedKernel kernel(tandem::residency_probe_kernel(), "residency_probe", c.threads);
  tandem::ShapeTarget target;
  if (c.target_blocks > 0) {
    target.kind = tandem::ShapeTarget::Kind::BlocksPerSm;
    target.blocks_per_sm = c.target_blocks;
  }
  kernel.shape(target);

  tandem::KernelFootprint f = kernel.footprint();
  f.dynamic_smem = static_cast<int64_t>(kernel.dynamic_smem());
  const int model = tandem::residency(kernel.limits(), f).blocks_per_sm;
  if (c.target_blocks > 0) EXPECT_EQ(model, c.target_blocks);
  EXPECT_EQ(kernel.blocks_per_sm(), model) << "cudaOccupancyMaxActiveBlocksPerMultiprocessor disagrees with the model";

  cudaStream_t stream;
  TANDEM_CUDA_CHECK(cudaStreamCreate(&stream));
  probe.reset(stream);
  tandem::ProbeKernelArgs args = probe.args();
  void* params[] = {&args};
  kernel.launch(dim3(probe.grid_for(model)), params, stream);
  const int reached = probe.max_blocks_per_sm(stream);
  TANDEM_CUDA_CHECK(cudaStreamDestroy(stream));
  EXPECT_EQ(reached, model) << c.threads << " threads, " << kernel.dynamic_smem() << " B dynamic shared memory";
}

INSTANTIATE_TEST_SUITE_P(Shapes, ResidencyTest,
                         ::testing::Values(ProbeCase{256, 0}, ProbeCase{256, 6}, ProbeCase{256, 4}, ProbeCase{256, 3},
                                           ProbeCase{256, 2}, ProbeCase{256, 1}, ProbeCase{128, 0}, ProbeCase{128, 12},
                                           ProbeCase{128, 5}, ProbeCase{512, 3}, ProbeCase{512, 1}, ProbeCase{1024, 1},
                                           ProbeCase{64, 0}, ProbeCase{64, 7}));

TEST(ShapedKernel, UnreachableTargetIsAClearError) {
  TANDEM_REQUIRE_GPUS(1);
  TANDEM_CUDA_CHECK(cudaSetDevice(0));
  tandem::ShapedKernel kernel(tandem::residency_probe_kernel(), "residency_probe", 1024);
  tandem::ShapeTarget target;
  target.kind = tandem::ShapeTarget::Kind::BlocksPerSm;
  target.blocks_per_sm = 3;  // 1024-thread blocks: at most 2 fit in 2048 threads
  try {
    kernel.shape(target);
    FAIL() << "expected an error";
  } catch (const tandem::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be reached"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("residency_probe"), std::string::npos) << e.what();
  }
}

TEST(ShapedKernel, CooperativeLaunchRefusesShaping) {
  TANDEM_REQUIRE_GPUS(1);
  TANDEM_CUDA_CHECK(cudaSetDevice(0));
  tandem::ShapedKernel kernel(tandem::residency_probe_kernel(), "residency_probe", 256, 0, /*cooperative=*/true);
  tandem::ShapeTarget target;
  target.kind = tandem::ShapeTarget::Kind::BlocksPerSm;
  target.blocks_per_sm = 2;
  EXPECT_THROW(kernel.shape(target), tandem::Error);
}

TEST(ShapedKernel, BytesTargetAboveDeviceMaximumIsAClearError) {
  TANDEM_REQUIRE_GPUS(1);
  TANDEM_CUDA_CHECK(cudaSetDevice(0));
  tandem::ShapedKernel kernel(tandem::residency_probe_kernel(), "residency_probe", 256);
  tandem::ShapeTarget target;
  target.kind = tandem::ShapeTarget::Kind::Bytes;
  target.bytes = 1 << 20;
  EXPECT_THROW(kernel.shape(target), tandem::Error);
}

}  // namespace
