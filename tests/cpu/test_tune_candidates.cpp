#include <gtest/gtest.h>

#include <algorithm>

#include "harness/tuner.h"
#include "program_tools/program_tuner.h"

namespace tb = tandem::bench;
using tandem::parse_policy;
using tandem::to_string;

namespace {
std::vector<std::string> texts(const std::vector<tandem::OverlapPolicy>& policies) {
  std::vector<std::string> out;
  for (const auto& p : policies) out.push_back(to_string(p));
  return out;
}
}  // namespace

TEST(TuneCandidates, OrdersCoverPriorityAndLaunchOrder) {
  EXPECT_EQ(texts(tb::order_candidates()),
            (std::vector<std::string>{"concurrent", "priority", "comm-first", "comm-first+priority"}));
}

TEST(TuneCandidates, ShapingCoversAutoAndEveryLevelBelowNatural) {
  tb::CaseTraits t{132, 4, false};
  EXPECT_EQ(
      texts(tb::shaping_candidates(parse_policy("priority"), t)),
      (std::vector<std::string>{"shape:auto+priority", "shape:1+priority", "shape:2+priority", "shape:3+priority"}));
  t.natural_blocks_per_sm = 0;  // a library's closed kernel: nothing to shape
  EXPECT_TRUE(tb::shaping_candidates(parse_policy("priority"), t).empty());
}

TEST(TuneCandidates, SmTargetsOnlyForGemmsAndNeverBelowHalf) {
  tb::CaseTraits t{132, 1, true};
  EXPECT_EQ(
      texts(tb::sm_target_candidates(parse_policy("comm-first"), t)),
      (std::vector<std::string>{"comm-first+sm-target:124", "comm-first+sm-target:116", "comm-first+sm-target:108",
                                "comm-first+sm-target:100", "comm-first+sm-target:84"}));
  EXPECT_EQ(texts(tb::sm_target_refinements(parse_policy("comm-first+sm-target:116"), t)),
            (std::vector<std::string>{"comm-first+sm-target:112", "comm-first+sm-target:120"}));
  t.has_sm_target = false;
  EXPECT_TRUE(tb::sm_target_candidates(parse_policy("comm-first"), t).empty());
  t = {16, 1, true};
  for (const auto& p : tb::sm_target_candidates(parse_policy("concurrent"), t)) EXPECT_GE(*p.sm_target, 8);
}

TEST(TuneCandidates, NcclResourcesAndCopyEngine) {
  EXPECT_EQ(texts(tandem::nccl_candidates(parse_policy("priority"))),
            (std::vector<std::string>{"priority+nccl-ctas:..4", "priority+nccl-ctas:..8", "priority+nccl-ctas:..16",
                                      "priority+nccl-cga:1", "priority+nccl-cta-policy:efficiency"}));
  // The base with copy engines (its NCCL knobs dropped), then bare copy engines under every order.
  EXPECT_EQ(texts(tb::copy_engine_candidates(parse_policy("sm-target:108+nccl-ctas:..24+nccl-cga:1"))),
            (std::vector<std::string>{"sm-target:108+copy-engine", "copy-engine", "priority+copy-engine",
                                      "comm-first+copy-engine", "comm-first+priority+copy-engine"}));
  EXPECT_EQ(texts(tb::copy_engine_candidates(parse_policy("comm-first+nccl-cga:1"))),
            (std::vector<std::string>{"comm-first+copy-engine", "copy-engine", "priority+copy-engine",
                                      "comm-first+priority+copy-engine"}));
  EXPECT_EQ(texts(tb::copy_engine_candidates(parse_policy("priority+nccl-symmetric"))),
            (std::vector<std::string>{"priority+copy-engine", "copy-engine", "comm-first+copy-engine",
                                      "comm-first+priority+copy-engine"}));
  EXPECT_EQ(texts(tb::symmetric_candidates(parse_policy("shape:4+priority"))),
            (std::vector<std::string>{"shape:4+priority+nccl-symmetric"}));
  EXPECT_TRUE(tb::symmetric_candidates(parse_policy("green:96+copy-engine")).empty());
}

TEST(TuneCandidates, GreenPartitionsAreMultiplesOfEight) {
  tb::CaseTraits t{132, 8, false};
  EXPECT_EQ(texts(tb::green_candidates(parse_policy("priority+sm-target:116"), t)),
            (std::vector<std::string>{"priority+green:112", "priority+green:96"}));
}

TEST(TuneCandidates, PartitionsGiveNcclExactlyTheFreedSms) {
  tb::CaseTraits gemm{132, 1, true};
  EXPECT_EQ(texts(tb::partition_candidates(parse_policy("comm-first+priority"), gemm)),
            (std::vector<std::string>{"comm-first+priority+sm-target:124+nccl-ctas:..8+nccl-cga:1",
                                      "comm-first+priority+sm-target:116+nccl-ctas:..16+nccl-cga:1",
                                      "comm-first+priority+sm-target:108+nccl-ctas:..24+nccl-cga:1",
                                      "comm-first+priority+sm-target:100+nccl-ctas:..32+nccl-cga:1"}));
  tb::CaseTraits stream{132, 8, false};
  const auto green = tb::partition_candidates(parse_policy("shape:5+priority+copy-engine"), stream);
  ASSERT_EQ(green.size(), 4u);
  EXPECT_EQ(to_string(green[0]), "priority+nccl-ctas:..8+nccl-cga:1+green:120");
  EXPECT_EQ(to_string(green[3]), "priority+nccl-ctas:..32+nccl-cga:1+green:96");
}

TEST(TuneCandidates, ProgramTuneTriesTheTargetedComputeControlsBeforeTheAlwaysOnForm) {
  const std::vector<std::string> candidates = texts(tandem::program_tools::program_candidates());
  const auto position = [&](const std::string& text) {
    const auto at = std::find(candidates.begin(), candidates.end(), text);
    EXPECT_NE(at, candidates.end()) << text;
    return at - candidates.begin();
  };
  // Targeted (the default): shaping only beside an outstanding collective, first; then the paper's form.
  for (const char* targeted : {"shape:1", "shape:2+priority", "shape:4+priority", "shape:auto+priority"})
    for (const char* always : {"shape:2+priority+compute-always", "shape:4+priority+compute-always"})
      EXPECT_LT(position(targeted), position(always)) << targeted << " before " << always;
  EXPECT_EQ(candidates.front(), "priority");
  EXPECT_EQ(candidates.size(), 17u);
}
