// The check of the targeted compute controls against what ran (tandem/shaping_check.h): which
// recorded kernels were shaped, told by their name and size, and the two shares, on synthetic
// intervals whose answers are worked out by hand.
#include <gtest/gtest.h>

#include "tandem/shaping_check.h"

namespace tandem {
namespace {

Activity busy(int64_t start, int64_t end) { return Activity{start, end, ActivityClass::Communication}; }

TEST(shaping_check_form, ASizeTellsTheFormOnlyWhenItIsOneWays) {
  LaunchSizes gemm;
  gemm.shaped = {98304};
  gemm.natural = {0, 16384};
  EXPECT_EQ(launch_form(&gemm, 98304), LaunchForm::Shaped);
  EXPECT_EQ(launch_form(&gemm, 16384), LaunchForm::Natural);
  EXPECT_EQ(launch_form(&gemm, 4096), LaunchForm::Natural) << "every shaped size is noted: an unnoted one is asked";
  EXPECT_EQ(launch_form(nullptr, 98304), LaunchForm::Natural) << "never launched under the policy";
  gemm.natural.push_back(98304);
  EXPECT_EQ(launch_form(&gemm, 98304), LaunchForm::Unattributed) << "the program asked for that size too";
}

TEST(shaping_check_form, OverflowedSizesMakeTheirOtherKindUnattributed) {
  LaunchSizes k;
  k.shaped = {65536};
  k.natural = {0};
  k.natural_overflowed = true;  // the program asked for more sizes than were noted: 65536 may be one
  EXPECT_EQ(launch_form(&k, 65536), LaunchForm::Unattributed);
  EXPECT_EQ(launch_form(&k, 0), LaunchForm::Natural);
  k.natural_overflowed = false;
  k.shaped_overflowed = true;  // a shaped size may be unnoted: any size not asked for may be shaped
  EXPECT_EQ(launch_form(&k, 4096), LaunchForm::Unattributed);
  EXPECT_EQ(launch_form(&k, 0), LaunchForm::Unattributed);
  EXPECT_EQ(launch_form(&k, 65536), LaunchForm::Shaped);
}

// Communication [100,200) and [300,400). Kernels:
//   shaped  [0,50)     not beside
//   shaped  [150,350)  beside for 50 + 50
//   natural [180,220)  beside for 20 (of which [180,200) also under the shaped one)
//   natural [500,600)  not beside
//   unattributed [100,400): left out of everything
// Computation beside communication, as a union: [150,200) u [300,350) u [180,200) = 100 ns, of which
// the shaped kernel's: 100 ns. So 1 of 2 shaped kernels ran beside, and 100 % of the time beside was shaped.
TEST(shaping_check, SharesOfKernelsAndOfTimeBesideCommunication) {
  const std::vector<KernelRun> kernels = {{0, 50, LaunchForm::Shaped},
                                          {150, 350, LaunchForm::Shaped},
                                          {180, 220, LaunchForm::Natural},
                                          {500, 600, LaunchForm::Natural},
                                          {100, 400, LaunchForm::Unattributed}};
  const ShapingCheck c = check_shaping(kernels, {busy(300, 400), busy(100, 200)});
  EXPECT_EQ(c.shaped, 2u);
  EXPECT_EQ(c.shaped_beside, 1u);
  EXPECT_EQ(c.beside, 2u);
  EXPECT_EQ(c.beside_ns, 100);
  EXPECT_EQ(c.beside_shaped_ns, 100);
  EXPECT_EQ(c.unattributed, 1u);
  EXPECT_DOUBLE_EQ(*c.shaped_beside_share(), 0.5);
  EXPECT_DOUBLE_EQ(*c.beside_shaped_share(), 1.0);
}

TEST(shaping_check, NaturalTimeBesideCommunicationLowersTheSecondShare) {
  // Communication [0,100) and [90,150) (overlapping: one union [0,150)); shaped [0,30), natural
  // [120,200) beside for 30 ns, and a kernel that touches the end only ([150,160): not beside).
  const ShapingCheck c =
      check_shaping({{0, 30, LaunchForm::Shaped}, {120, 200, LaunchForm::Natural}, {150, 160, LaunchForm::Natural}},
                    {busy(0, 100), busy(90, 150)});
  EXPECT_EQ(c.beside, 2u);
  EXPECT_EQ(c.beside_ns, 60);
  EXPECT_EQ(c.beside_shaped_ns, 30);
  EXPECT_DOUBLE_EQ(*c.beside_shaped_share(), 0.5);
  EXPECT_DOUBLE_EQ(*c.shaped_beside_share(), 1.0);
}

TEST(shaping_check, NoShapedKernelOrNoOverlapGivesNoShareNotZero) {
  const ShapingCheck none = check_shaping({{0, 10, LaunchForm::Natural}}, {busy(20, 30)});
  EXPECT_FALSE(none.shaped_beside_share());
  EXPECT_FALSE(none.beside_shaped_share());
  const std::string text = shaping_check_text(none);
  EXPECT_NE(text.find("none shaped"), std::string::npos) << text;
  EXPECT_NE(text.find("none ran beside communication"), std::string::npos) << text;
}

TEST(shaping_check, TheTextGivesBothSharesWithTheirCounts) {
  const ShapingCheck c = check_shaping({{0, 50, LaunchForm::Shaped},
                                        {150, 350, LaunchForm::Shaped},
                                        {180, 220, LaunchForm::Natural},
                                        {100, 400, LaunchForm::Unattributed}},
                                       {busy(100, 200), busy(300, 400)});
  EXPECT_EQ(shaping_check_text(c),
            "shaped kernels beside communication: 50.0 % (1 of 2); computation beside communication in shaped "
            "kernels: 100.0 % of its time (0.000 of 0.000 ms, 1 of 2 kernels); 1 kernels unattributed (a size both "
            "shaped and asked for)");
}

}  // namespace
}  // namespace tandem
