// cu-mask:N's stream and the priority streams on an AMD GPU (HIP build; skipped without a GPU): the
// residency probe launched on a stream masked to N CUs reaches N CUs at most, and the collective's
// stream takes the device's greatest priority.
#include <gtest/gtest.h>

#include <algorithm>

#include "gpu_test_util.h"
#include "tandem/cu_mask_stream.h"
#include "tandem/cuda_check.h"
#include "tandem/residency_probe.h"
#include "tandem/shaped_kernel.h"
#include "tandem/streams.h"

namespace {

TEST(CuMaskStream, ProbeRunsOnTheMaskedCusOnly) {
  TANDEM_REQUIRE_GPUS(1);
  TANDEM_CUDA_CHECK(cudaSetDevice(0));
  tandem::ResidencyProbe probe(0);
  const int compute_cus = probe.sm_count() / 2;
  tandem::CuMaskStream masked(0, compute_cus);
  EXPECT_EQ(masked.plan().compute_cus, compute_cus);
  tandem::ShapedKernel kernel(tandem::residency_probe_kernel(), "residency_probe", 256);
  probe.reset(masked.stream());
  tandem::ProbeKernelArgs args = probe.args();
  void* params[] = {&args};
  kernel.launch(dim3(probe.grid_for(kernel.blocks_per_sm())), params, masked.stream());
  const std::vector<int> peaks = probe.peaks(masked.stream());
  const auto used = std::count_if(peaks.begin(), peaks.end(), [](int peak) { return peak > 0; });
  EXPECT_GT(used, 0);
  EXPECT_LE(used, compute_cus) << "a stream masked to " << compute_cus << " CUs ran blocks on " << used;
}

TEST(CuMaskStream, ACountTheDeviceCannotGiveIsTheUsersError) {
  TANDEM_REQUIRE_GPUS(1);
  int cus = 0;
  TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&cus, cudaDevAttrMultiProcessorCount, 0));
  try {
    tandem::CuMaskStream masked(0, cus);
    FAIL() << "a mask of every CU was accepted";
  } catch (const tandem::UserError& e) {
    EXPECT_EQ(std::string(e.what()), "cu-mask:" + std::to_string(cus) + " needs between 1 and " +
                                         std::to_string(cus - 1) + " compute units on this GPU (it has " +
                                         std::to_string(cus) + ")");
  }
}

TEST(PriorityStreams, CollectiveTakesTheGreatestPriority) {
  TANDEM_REQUIRE_GPUS(1);
  TANDEM_CUDA_CHECK(cudaSetDevice(0));
  const tandem::StreamPriorityRange range = tandem::stream_priority_range();
  EXPECT_LE(range.greatest, range.least);
  EXPECT_EQ(tandem::make_comm_stream().priority(), range.greatest);
  EXPECT_EQ(tandem::make_compute_stream().priority(), range.least);
}

}  // namespace
