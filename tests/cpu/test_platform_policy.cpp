// Which build applies which policy token (tandem/platform.h): cu-mask:N is AMD's, parsed and printed
// like every token, applied by HIP builds and refused in one line by CUDA builds. The rules are
// checked for both platforms in either build; parse_policy follows the build's own.
#include <gtest/gtest.h>

#include <string>

#include "tandem/error.h"
#include "tandem/policy.h"
#include "tandem/policy_tokens.h"

namespace tandem {
namespace {

constexpr const char* kCudaRefusal =
    "cu-mask:8 cannot be applied in a CUDA build: compute-unit masks are AMD's (hipExtStreamCreateWithCUMask); on "
    "NVIDIA, green:N confines compute to N SMs";

OverlapPolicy cu_mask(int cus) {
  OverlapPolicy policy;
  policy.comm_priority = true;
  policy.cu_mask_cus = cus;
  return policy;
}

TEST(PlatformPolicy, TheBuildKnowsItsPlatform) {
  EXPECT_EQ(std::string(to_string(build_platform())), TANDEM_TEST_PLATFORM);
  EXPECT_EQ(std::string(to_string(Platform::Cuda)), "CUDA");
  EXPECT_EQ(std::string(to_string(Platform::Hip)), "HIP");
}

TEST(PlatformPolicy, CuMaskIsAppliedByHipBuildsAndRefusedByCudaBuilds) {
  EXPECT_EQ(platform_refusal(cu_mask(8), Platform::Hip), "");
  EXPECT_EQ(platform_refusal(cu_mask(8), Platform::Cuda), kCudaRefusal);
  // Every other token is for both builds.
  OverlapPolicy other;
  other.comm_priority = true;
  other.green_sms = 64;
  other.shape.kind = ShapeTarget::Kind::Auto;
  for (Platform platform : {Platform::Cuda, Platform::Hip}) EXPECT_EQ(platform_refusal(other, platform), "");
}

TEST(PlatformPolicy, CuMaskCountsTellPoliciesApart) {
  EXPECT_EQ(cu_mask(8), cu_mask(8));
  EXPECT_NE(cu_mask(8), cu_mask(9));
  OverlapPolicy unmasked = cu_mask(8);
  unmasked.cu_mask_cus.reset();
  EXPECT_NE(cu_mask(8), unmasked);
}

TEST(PlatformPolicy, CuMaskPrintsInItsCanonicalPlace) {
  EXPECT_EQ(to_string(cu_mask(40)), "priority+cu-mask:40");
  const PolicyToken* row = find_policy_token("cu-mask");
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->syntax(), "cu-mask:N");
  EXPECT_TRUE(row->applies_on(Platform::Hip));
  EXPECT_FALSE(row->applies_on(Platform::Cuda));
  EXPECT_EQ(platform_text(*row),
            "HIP (CUDA: refused, compute-unit masks are AMD's (hipExtStreamCreateWithCUMask); on NVIDIA, green:N "
            "confines compute to N SMs)");
  EXPECT_EQ(platform_text(*find_policy_token("priority")), "CUDA, HIP");
  EXPECT_EQ(needs_text(row->needs), "two streams, a compute-unit mask");
  // Neither `tandem run` nor tandem.torch reaches HIP launches yet.
  EXPECT_EQ(run_refusal(cu_mask(8)),
            "cu-mask:8 cannot be applied by `tandem run`: the interposer hooks CUDA launches "
            "only (docs/AMD.md)");
  EXPECT_EQ(pytorch_refusal(cu_mask(8)),
            "cu-mask:8 cannot be applied inside PyTorch: tandem.torch is built for CUDA only (docs/AMD.md)");
}

TEST(PlatformPolicy, ParsingFollowsTheBuildsPlatform) {
  if (build_platform() == Platform::Hip) {
    EXPECT_EQ(parse_policy("priority+cu-mask:8"), cu_mask(8));
    EXPECT_EQ(parse_policy_list("cu-mask:8+priority,priority").front(), cu_mask(8));
    return;
  }
  try {
    parse_policy("priority+cu-mask:8");
    FAIL() << "a CUDA build accepted cu-mask";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), kCudaRefusal);
  }
  try {
    parse_policy_list("priority,cu-mask:8");
    FAIL() << "a CUDA build accepted cu-mask in a list";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), std::string("policy list item 2 of 'priority,cu-mask:8': ") + kCudaRefusal);
  }
}

// The value is checked as the grammar's, the same in every build, before the platform is asked.
TEST(PlatformPolicy, CuMaskValueErrorsNameTheValue) {
  for (const char* text : {"cu-mask:0", "cu-mask:-3", "cu-mask:x", "cu-mask"}) {
    try {
      parse_policy(text);
      FAIL() << text;
    } catch (const Error& e) {
      EXPECT_NE(e.message().find("policy token '" + std::string(text) + "'"), std::string::npos) << e.message();
    }
  }
}

}  // namespace
}  // namespace tandem
