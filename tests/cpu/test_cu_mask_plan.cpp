// The compute-unit mask of cu-mask:N (tandem/cu_mask_plan.h): which CUs, how many words, how the
// driver spreads them over the shader engines, and the counts a device cannot give.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tandem/cu_mask_plan.h"
#include "tandem/error.h"
#include "tandem/gpu_catalog.h"

namespace tandem {
namespace {

TEST(CuMaskPlan, LowestBitsOneWordPer32Cus) {
  // An MI250X GCD: 110 CUs, so 4 words; 40 CUs are the first word whole and 8 bits of the second.
  const CuMaskPlan plan = plan_cu_mask(gpu_limits("mi250x").sm_count, 40);
  EXPECT_EQ(plan.total_cus, 110);
  EXPECT_EQ(plan.compute_cus, 40);
  EXPECT_EQ(plan.cus_left_for_collective(), 70);
  EXPECT_EQ(plan.words, (std::vector<uint32_t>{0xffffffffu, 0xffu, 0u, 0u}));
  EXPECT_EQ(mask_cu_count(plan.words), 40);
}

TEST(CuMaskPlan, WordBoundariesAndTheLargestMask) {
  EXPECT_EQ(plan_cu_mask(64, 32).words, (std::vector<uint32_t>{0xffffffffu, 0u}));
  EXPECT_EQ(plan_cu_mask(65, 33).words, (std::vector<uint32_t>{0xffffffffu, 1u, 0u}));
  EXPECT_EQ(plan_cu_mask(2, 1).words, (std::vector<uint32_t>{1u}));
  // Every CU but one: the collective keeps exactly one.
  const CuMaskPlan most = plan_cu_mask(110, 109);
  EXPECT_EQ(mask_cu_count(most.words), 109);
  EXPECT_EQ(most.words[3], 0x1fffu);  // CUs 96..108
  EXPECT_EQ(most.cus_left_for_collective(), 1);
}

// The driver deals bit i to shader engine i mod engines: the lowest N bits are as even as N allows,
// where the first N physical CUs of one engine would not be.
TEST(CuMaskPlan, LowestBitsSpreadEvenlyOverShaderEngines) {
  const CuMaskPlan plan = plan_cu_mask(110, 44);
  EXPECT_EQ(cus_per_shader_engine(plan, 8), (std::vector<int>{6, 6, 6, 6, 5, 5, 5, 5}));
  EXPECT_EQ(cus_per_shader_engine(plan_cu_mask(110, 16), 8), (std::vector<int>(8, 2)));
  EXPECT_EQ(cus_per_shader_engine(plan, 1), (std::vector<int>{44}));
  EXPECT_THROW(cus_per_shader_engine(plan, 0), Error);
}

TEST(CuMaskPlan, CountsTheDeviceCannotGiveNameTheValue) {
  const std::pair<int, const char*> refused[] = {
      {110, "cu-mask:110 needs between 1 and 109 compute units on this GPU (it has 110)"},
      {111, "cu-mask:111 needs between 1 and 109 compute units on this GPU (it has 110)"},
      {0, "cu-mask:0 needs between 1 and 109 compute units on this GPU (it has 110)"},
  };
  for (const auto& [count, why] : refused) {
    try {
      plan_cu_mask(110, count);
      FAIL() << count;
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()), why);
    }
  }
  EXPECT_THROW(plan_cu_mask(1, 1), Error);  // no GPU has one CU to split
}

}  // namespace
}  // namespace tandem
