// The check of the targeted compute controls against what ran (tandem/shaping_check.h): which
// recorded kernels were shaped, told by their name and size, and the two shares, on synthetic
// intervals whose answers are worked out by hand.
#include <gtest/gtest.h>

#include "tandem/shaping_check.h"

namespace tandem {
namespace {

// Communication over [start, end), issued by the process's call number `issued` (0: unknown).
Activity busy(int64_t start, int64_t end, uint32_t issued = 0) {
  return Activity{start, end, ActivityClass::Communication, issued};
}

LaunchSizes sizes(std::vector<uint32_t> shaped, std::vector<uint32_t> left_alone, std::vector<uint32_t> unshapeable) {
  LaunchSizes s;
  s.sizes[0] = std::move(shaped);
  s.sizes[1] = std::move(left_alone);
  s.sizes[2] = std::move(unshapeable);
  return s;
}

TEST(shaping_check_form, ASizeTellsTheKindOnlyWhenOneKindNotedIt) {
  LaunchSizes gemm = sizes({98304}, {0}, {16384});
  EXPECT_EQ(launch_form(&gemm, 98304), LaunchForm::Shaped);
  EXPECT_EQ(launch_form(&gemm, 0), LaunchForm::LeftAlone);
  EXPECT_EQ(launch_form(&gemm, 16384), LaunchForm::Unshapeable);
  EXPECT_EQ(launch_form(&gemm, 4096), LaunchForm::Unattributed) << "a size never noted";
  EXPECT_EQ(launch_form(nullptr, 98304), LaunchForm::Unattributed) << "never launched under the policy";
  gemm.sizes[2].push_back(98304);
  EXPECT_EQ(launch_form(&gemm, 98304), LaunchForm::Unattributed)
      << "a launch the policy cannot shape got that size too";
  EXPECT_STREQ(to_string(LaunchForm::LeftAlone), "left-alone");
}

TEST(shaping_check_form, AnOverflowedKindMayHoldAnySize) {
  LaunchSizes k = sizes({65536}, {0}, {});
  k.overflowed[1] = true;  // the rule left alone launches of more sizes than were noted: 65536 may be one
  EXPECT_EQ(launch_form(&k, 65536), LaunchForm::Unattributed);
  EXPECT_EQ(launch_form(&k, 0), LaunchForm::LeftAlone);
  EXPECT_EQ(launch_form(&k, 4096), LaunchForm::LeftAlone) << "only the overflowed kind can hold an unnoted size";
  k.overflowed[1] = false;
  k.overflowed[0] = true;
  EXPECT_EQ(launch_form(&k, 0), LaunchForm::Unattributed);
  EXPECT_EQ(launch_form(&k, 65536), LaunchForm::Shaped);
}

// Communication [100,200) and [300,400). Kernels:
//   shaped      [0,50)     not beside
//   shaped      [150,350)  beside for 50 + 50
//   left alone  [180,220)  beside for 20 (of which [180,200) also under the shaped one)
//   left alone  [500,600)  not beside
//   unattributed [100,400): left out of everything
// Computation beside communication, as a union: [150,200) u [300,350) u [180,200) = 100 ns, of which
// the shaped kernel's: 100 ns. So 1 of 2 shaped kernels ran beside, and 100 % of the time beside was shaped.
TEST(shaping_check, SharesOfKernelsAndOfTimeBesideCommunication) {
  const std::vector<KernelRun> kernels = {{0, 50, LaunchForm::Shaped},
                                          {150, 350, LaunchForm::Shaped},
                                          {180, 220, LaunchForm::LeftAlone},
                                          {500, 600, LaunchForm::LeftAlone},
                                          {100, 400, LaunchForm::Unattributed}};
  const ShapingCheck c = check_shaping(kernels, {busy(300, 400), busy(100, 200)});
  EXPECT_EQ(c.shaped, 2u);
  EXPECT_EQ(c.shaped_beside, 1u);
  EXPECT_EQ(c.beside, 2u);
  EXPECT_EQ(c.beside_ns, 100);
  EXPECT_EQ(c.beside_shapeable_ns, 100);
  EXPECT_EQ(c.beside_shaped_ns, 100);
  EXPECT_EQ(c.unattributed, 1u);
  EXPECT_DOUBLE_EQ(*c.shaped_beside_share(), 0.5);
  EXPECT_DOUBLE_EQ(*c.beside_shaped_share(), 1.0);
}

TEST(shaping_check, LeftAloneTimeLowersTheSecondShareUnshapeableTimeDoesNot) {
  // Communication [0,100) and [90,150) (overlapping: one union [0,150)); shaped [0,30), left alone
  // [120,200) beside for 30 ns, one the policy cannot shape [40,70) beside for 30 ns, and a kernel
  // that touches the end only ([150,160): not beside).
  const ShapingCheck c = check_shaping({{0, 30, LaunchForm::Shaped},
                                        {120, 200, LaunchForm::LeftAlone},
                                        {40, 70, LaunchForm::Unshapeable},
                                        {150, 160, LaunchForm::LeftAlone}},
                                       {busy(0, 100), busy(90, 150)});
  EXPECT_EQ(c.beside, 3u);
  EXPECT_EQ(c.beside_ns, 90);
  EXPECT_EQ(c.beside_shapeable_ns, 60);
  EXPECT_EQ(c.beside_shaped_ns, 30);
  EXPECT_DOUBLE_EQ(*c.beside_shaped_share(), 0.5);
  EXPECT_DOUBLE_EQ(*c.shaped_beside_share(), 1.0);
  EXPECT_NE(shaping_check_text(c).find("0.000 of 0.000 ms beside communication in kernels it cannot shape"),
            std::string::npos)
      << shaping_check_text(c);
}

TEST(shaping_check, NoShapedKernelOrNoOverlapGivesNoShareNotZero) {
  const ShapingCheck none = check_shaping({{0, 10, LaunchForm::LeftAlone}}, {busy(20, 30)});
  EXPECT_FALSE(none.shaped_beside_share());
  EXPECT_FALSE(none.beside_shaped_share());
  const std::string text = shaping_check_text(none);
  EXPECT_NE(text.find("none shaped"), std::string::npos) << text;
  EXPECT_NE(text.find("none ran beside communication"), std::string::npos) << text;
}

// Communication A [100,200) issued as call 5, B [300,400) as call 50. Left alone: K1 [150,350)
// (call 20) beside A (issued before it) over [150,200) and beside B (after it) over [300,350); K3
// [380,420) of unknown order beside B over [380,400), counted as issued before; K4 [390,395) (call 10)
// beside B, issued after it, but under K3's time beside a collective issued before. Shaped: K2
// [320,340). Left alone beside communication: [150,200) u [300,350) u [380,400) less [320,340) = 100
// ns, of which beside collectives issued later only: [300,320) u [340,350) = 30 ns.
TEST(shaping_check, TimeLeftAloneIsSplitByWhetherItsCollectiveWasIssuedAfterTheKernel) {
  const ShapingCheck c = check_shaping({{150, 350, LaunchForm::LeftAlone, 20},
                                        {320, 340, LaunchForm::Shaped, 30},
                                        {380, 420, LaunchForm::LeftAlone, 0},
                                        {390, 395, LaunchForm::LeftAlone, 10}},
                                       {busy(300, 400, 50), busy(100, 200, 5)});
  EXPECT_EQ(c.beside_shapeable_ns, 120);
  EXPECT_EQ(c.beside_shaped_ns, 20);
  EXPECT_EQ(c.left_alone_beside_later_ns, 30);
  EXPECT_DOUBLE_EQ(*c.left_alone_later_share(), 0.3);
  // A long collective that starts before a short one ended is still found beside a later kernel.
  const ShapingCheck enclosed =
      check_shaping({{500, 600, LaunchForm::LeftAlone, 5}}, {busy(0, 1000, 9), busy(100, 200, 1)});
  EXPECT_EQ(enclosed.left_alone_beside_later_ns, 100);
  // Nothing left alone beside communication: no share, not zero.
  EXPECT_FALSE(check_shaping({{0, 10, LaunchForm::Shaped, 1}}, {busy(0, 10, 2)}).left_alone_later_share());
}

TEST(shaping_check, TheTextGivesBothSharesWithTheirCounts) {
  // In milliseconds: shaped [0,1) and [2,4), left alone [2,6) (call 1) beside communication [3,5)
  // issued after it (call 2).
  const int64_t ms = 1000000;
  const ShapingCheck c = check_shaping({{0, 1 * ms, LaunchForm::Shaped},
                                        {2 * ms, 4 * ms, LaunchForm::Shaped},
                                        {2 * ms, 6 * ms, LaunchForm::LeftAlone, 1},
                                        {0, 9 * ms, LaunchForm::Unattributed}},
                                       {busy(3 * ms, 5 * ms, 2)});
  EXPECT_EQ(shaping_check_text(c),
            "shaped kernels beside communication: 50.0 % (1 of 2); computation beside communication that the policy "
            "can shape, shaped: 50.0 % of its time (1.000 of 2.000 ms); of the time left alone, 100.0 % beside "
            "collectives issued after the kernel (not yet issued at its launch); 1 kernels unattributed (a size "
            "noted for two kinds, or never)");
}

}  // namespace
}  // namespace tandem
