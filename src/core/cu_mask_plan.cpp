// The compute-unit mask of cu-mask:N (tandem/cu_mask_plan.h says why its lowest bits).
#include "tandem/cu_mask_plan.h"

#include <bitset>
#include <string>

#include "tandem/error.h"

namespace tandem {

namespace {
constexpr int kCusPerWord = 32;
}  // namespace

CuMaskPlan plan_cu_mask(int total_cus, int compute_cus) {
  TANDEM_REQUIRE(total_cus >= 2, "a compute-unit mask needs a GPU of at least 2 CUs, not " + std::to_string(total_cus));
  // The count is the user's (the policy's), so a bad one is one plain line naming it.
  TANDEM_CHECK_INPUT(compute_cus >= 1 && compute_cus < total_cus,
                     "cu-mask:" + std::to_string(compute_cus) + " needs between 1 and " +
                         std::to_string(total_cus - 1) + " compute units on this GPU (it has " +
                         std::to_string(total_cus) + ")");
  CuMaskPlan plan;
  plan.total_cus = total_cus;
  plan.compute_cus = compute_cus;
  // One word per 32 CUs of the device: a shorter mask would leave the driver to guess the rest.
  plan.words.assign(static_cast<size_t>((total_cus + kCusPerWord - 1) / kCusPerWord), 0u);
  for (int cu = 0; cu < compute_cus; ++cu) plan.words[cu / kCusPerWord] |= 1u << (cu % kCusPerWord);
  return plan;
}

std::vector<int> cus_per_shader_engine(const CuMaskPlan& plan, int shader_engines) {
  TANDEM_REQUIRE(shader_engines >= 1, "a GPU has at least one shader engine, not " + std::to_string(shader_engines));
  std::vector<int> per_engine(static_cast<size_t>(shader_engines), 0);
  for (int bit = 0; bit < plan.total_cus; ++bit)
    if (plan.words[bit / kCusPerWord] >> (bit % kCusPerWord) & 1u) ++per_engine[bit % shader_engines];
  return per_engine;
}

int mask_cu_count(const std::vector<uint32_t>& words) {
  int count = 0;
  for (uint32_t word : words) count += static_cast<int>(std::bitset<kCusPerWord>(word).count());
  return count;
}

}  // namespace tandem
