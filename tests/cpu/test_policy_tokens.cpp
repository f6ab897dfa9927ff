// The token table (tandem/policy_tokens.h): what `tandem run` may apply, and that the rows cover
// every control of an OverlapPolicy. Expected texts are written out here, not read from the rows.
#include <gtest/gtest.h>

#include <string>

#include "tandem/error.h"
#include "tandem/policy.h"
#include "tandem/policy_tokens.h"

namespace tandem {
namespace {

TEST(PolicyTokens, RunAppliesWhatAnInterposerOrNcclsEnvironmentCan) {
  for (const char* text :
       {"concurrent", "priority", "shape:3", "shape:48KiB", "shape:auto", "sm-target:100", "nccl-ctas:2..16",
        "nccl-cga:1", "nccl-cta-policy:zero", "priority+shape:auto+sm-target:116+nccl-ctas:..16+nccl-cga:1"}) {
    EXPECT_TRUE(run_can_apply(parse_policy(text))) << text;
    EXPECT_EQ(run_refusal(parse_policy(text)), "") << text;
  }
}

TEST(PolicyTokens, RunRefusesTokensThatNeedTheProgram) {
  const std::pair<const char*, const char*> refused[] = {
      {"sequential", "sequential cannot be applied by `tandem run`: the program's streams are its own"},
      {"comm-first+priority", "comm-first cannot be applied by `tandem run`: the program decides its launch order"},
      {"green:8+priority", "green:8 cannot be applied by `tandem run`: it needs green contexts in the program"},
      {"nccl-symmetric",
       "nccl-symmetric cannot be applied by `tandem run`: it needs symmetric NCCL windows registered by the program"},
  };
  for (const auto& [text, why] : refused) {
    EXPECT_FALSE(run_can_apply(parse_policy(text))) << text;
    EXPECT_EQ(run_refusal(parse_policy(text)), why) << text;
  }
}

// tandem.torch applies what PyTorch's own knobs carry (process-group options, the SM carveout, its
// DDP hook and FSDP2 collectives) and refuses the rest, with the reason from the same rows.
TEST(PolicyTokens, PyTorchRefusesWhatItLeavesNoWayToApply) {
  for (const char* text :
       {"concurrent", "priority+sm-target:116+nccl-ctas:..8+nccl-cga:1+nccl-cta-policy:zero", "copy-engine"})
    EXPECT_EQ(pytorch_refusal(parse_policy(text)), "") << text;
  EXPECT_EQ(pytorch_refusal(parse_policy("green:66+priority")),
            "green:66 cannot be applied inside PyTorch: tandem cannot move PyTorch's kernels into a green context; "
            "the program can, with torch.cuda.green_contexts");
  EXPECT_EQ(pytorch_refusal(parse_policy("shape:3+priority")),
            "shape:3 cannot be applied inside PyTorch: occupancy shaping pads the launches of PyTorch's compute "
            "kernels, which only tandem's interposer can do: run the program under `tandem run --policy "
            "shape:3+priority -- python ...` instead");
  for (const char* text : {"sequential", "comm-first", "nccl-symmetric"})
    EXPECT_NE(pytorch_refusal(parse_policy(text)).find(std::string(text) + " cannot be applied inside PyTorch"),
              std::string::npos)
        << text;
  EXPECT_EQ(to_string(LaunchOrder::ComputeFirst), std::string("concurrent"));
  EXPECT_EQ(to_string(NcclCtaPolicy::Efficiency), std::string("efficiency"));
}

TEST(PolicyTokens, SmTargetLeavesTheRestAsCarveout) {
  const auto target = sm_target_on(parse_policy("sm-target:116"), 132);
  ASSERT_TRUE(target);
  EXPECT_EQ(target->gemm_sms, 116);
  EXPECT_EQ(target->carveout, 16);
  EXPECT_FALSE(sm_target_on(parse_policy("priority"), 132));
  EXPECT_THROW(sm_target_on(parse_policy("sm-target:133"), 132), Error);
}

// Each numeric token at its smallest and largest accepted values, and an SM target of the whole GPU
// (no carveout).
TEST(PolicyTokens, NumericTokensAcceptTheirExactEdges) {
  const auto whole = sm_target_on(parse_policy("sm-target:132"), 132);
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->gemm_sms, 132);
  EXPECT_EQ(whole->carveout, 0);
  const auto one = sm_target_on(parse_policy("sm-target:1"), 1);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->carveout, 0);
  EXPECT_EQ(parse_policy("sm-target:2147483647").sm_target, 2147483647);
  EXPECT_EQ(parse_policy("green:1").green_sms, 1);
  EXPECT_EQ(parse_policy("green:2147483647").green_sms, 2147483647);
  EXPECT_EQ(parse_policy("shape:1").shape.blocks_per_sm, 1);
  EXPECT_EQ(parse_policy("shape:1B").shape.bytes, 1);
  EXPECT_EQ(parse_policy("shape:2097151KiB").shape.bytes, 2097151LL * 1024);
  EXPECT_EQ(parse_policy("shape:2047MiB").shape.bytes, 2047LL * 1024 * 1024);
  for (const char* text : {"nccl-ctas:1", "nccl-ctas:1..", "nccl-ctas:..1"}) {
    const OverlapPolicy p = parse_policy(text);
    EXPECT_TRUE(p.nccl_min_ctas || p.nccl_max_ctas) << text;
    EXPECT_EQ(p.nccl_min_ctas.value_or(1) + p.nccl_max_ctas.value_or(1), 2) << text;
  }
  for (const char* text : {"nccl-ctas:64", "nccl-ctas:64..", "nccl-ctas:..64", "nccl-ctas:64..64"}) {
    const OverlapPolicy p = parse_policy(text);
    EXPECT_TRUE(p.nccl_min_ctas || p.nccl_max_ctas) << text;
    EXPECT_EQ(p.nccl_min_ctas.value_or(64) + p.nccl_max_ctas.value_or(64), 128) << text;
  }
}

// A policy with every control set: clearing each row's control must give the default policy, so a
// field added to OverlapPolicy without a row (and so without parse, print or a run treatment) fails.
TEST(PolicyTokens, RowsCoverEveryControl) {
  OverlapPolicy all = parse_policy(
      "comm-first+priority+shape:3+sm-target:100+nccl-ctas:2..16+nccl-cga:2+"
      "nccl-cta-policy:zero+green:8+nccl-symmetric+copy-engine");
  for (const PolicyToken& row : policy_tokens()) row.clear(all);
  EXPECT_EQ(all, OverlapPolicy{});
  EXPECT_EQ(to_string(all), "concurrent");
}

TEST(PolicyTokens, EachRowPrintsOnlyItsOwnToken) {
  const OverlapPolicy p = parse_policy("shape:48KiB+nccl-ctas:..16+green:8");
  for (const PolicyToken& row : policy_tokens()) {
    const std::string printed = row.print(p);
    if (row.keyword == "shape")
      EXPECT_EQ(printed, "shape:48KiB");
    else if (row.keyword == "nccl-ctas")
      EXPECT_EQ(printed, "nccl-ctas:..16");
    else if (row.keyword == "green")
      EXPECT_EQ(printed, "green:8");
    else
      EXPECT_EQ(printed, "") << row.keyword;
  }
}

TEST(PolicyTokens, FindByKeyword) {
  ASSERT_NE(find_policy_token("nccl-cga"), nullptr);
  EXPECT_EQ(find_policy_token("nccl-cga")->syntax(), "nccl-cga:1|2|4");
  EXPECT_EQ(find_policy_token("priority")->syntax(), "priority");
  EXPECT_EQ(find_policy_token("shape:3"), nullptr);
  EXPECT_EQ(find_policy_token("prio"), nullptr);
}

}  // namespace
}  // namespace tandem
