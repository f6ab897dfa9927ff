// A policy's NCCL communicator settings (tandem/nccl_config.h): which policies the caller's own
// communicator serves (uses_default_nccl_settings), which ones can share one communicator
// (nccl_settings_key), and what each setting writes into an ncclConfig_t (apply_nccl_settings).
// Every field is checked on its own: a policy that differs from another in that field alone must
// get a communicator of its own, and one that differs in no NCCL field must share. Expectations come
// from NCCL's fields and the policy grammar, not from the code.
#include <gtest/gtest.h>
#include <nccl.h>

#include <string>
#include <vector>

#include "tandem/nccl_config.h"
#include "tandem/policy.h"

namespace {

using tandem::apply_nccl_settings;
using tandem::nccl_settings_key;
using tandem::OverlapPolicy;
using tandem::parse_policy;
using tandem::uses_default_nccl_settings;

// Policies that name no NCCL setting: the caller's communicator serves them all.
const std::vector<std::string> kNoSettings = {"concurrent",    "sequential", "priority",
                                              "comm-first",    "shape:2",    "shape:auto+priority",
                                              "sm-target:100", "green:66",   "shape:48KiB+comm-first+priority"};

// One policy per NCCL field, each differing from the default in that field alone (and from each other).
const std::vector<std::string> kOneSettingEach = {
    "nccl-ctas:2..",               // minCTAs alone
    "nccl-ctas:..16",              // maxCTAs alone
    "nccl-cga:1",                  // cluster size
    "nccl-cta-policy:efficiency",  // CTA policy
    "nccl-cta-policy:zero",        // CTA policy
    "nccl-symmetric",              // windows registered
    "copy-engine",                 // copy engines (windows and CTA policy zero)
};

TEST(NcclSettings, PoliciesWithoutNcclSettingsUseTheCallersCommunicator) {
  for (const auto& text : kNoSettings) {
    const OverlapPolicy p = parse_policy(text);
    EXPECT_TRUE(uses_default_nccl_settings(p)) << text;
    EXPECT_EQ(nccl_settings_key(p), "") << text;
  }
}

TEST(NcclSettings, EveryFieldAloneMakesTheSettingsNotTheDefault) {
  for (const auto& text : kOneSettingEach) {
    const OverlapPolicy p = parse_policy(text);
    EXPECT_FALSE(uses_default_nccl_settings(p)) << text;
    EXPECT_NE(nccl_settings_key(p), "") << text;
  }
}

TEST(NcclSettings, PoliciesDifferingInOneFieldGetCommunicatorsOfTheirOwn) {
  for (size_t i = 0; i < kOneSettingEach.size(); ++i)
    for (size_t j = i + 1; j < kOneSettingEach.size(); ++j)
      EXPECT_NE(nccl_settings_key(parse_policy(kOneSettingEach[i])),
                nccl_settings_key(parse_policy(kOneSettingEach[j])))
          << kOneSettingEach[i] << " and " << kOneSettingEach[j] << " would share a communicator";
}

TEST(NcclSettings, EachValueOfAFieldIsItsOwnCommunicator) {
  // Same fields set, different values: CTA counts, cluster sizes. 1..2 and 12.. have the same digits.
  const std::vector<std::string> values = {"nccl-ctas:2..8", "nccl-ctas:2..16", "nccl-ctas:4..8",   "nccl-ctas:8..8",
                                           "nccl-ctas:8..",  "nccl-ctas:..8",   "nccl-cga:1",       "nccl-cga:2",
                                           "nccl-cga:4",     "nccl-ctas:1..12", "nccl-ctas:11..12", "nccl-ctas:1..2",
                                           "nccl-ctas:12.."};
  std::vector<std::string> keys;
  for (const auto& text : values) keys.push_back(nccl_settings_key(parse_policy(text)));
  for (size_t i = 0; i < keys.size(); ++i)
    for (size_t j = i + 1; j < keys.size(); ++j) EXPECT_NE(keys[i], keys[j]) << values[i] << " and " << values[j];
}

TEST(NcclSettings, CombinedFieldsEachCount) {
  const std::string all = "nccl-ctas:2..16+nccl-cga:1+nccl-cta-policy:efficiency";
  const std::string key = nccl_settings_key(parse_policy(all));
  for (const char* without :
       {"nccl-ctas:..16+nccl-cga:1+nccl-cta-policy:efficiency", "nccl-ctas:2..+nccl-cga:1+nccl-cta-policy:efficiency",
        "nccl-ctas:2..16+nccl-cta-policy:efficiency", "nccl-ctas:2..16+nccl-cga:1",
        "nccl-ctas:2..16+nccl-cga:1+nccl-cta-policy:zero",
        "nccl-ctas:2..16+nccl-cga:1+nccl-cta-policy:efficiency+nccl-symmetric"})
    EXPECT_NE(nccl_settings_key(parse_policy(without)), key) << without;
}

TEST(NcclSettings, ControlsOutsideNcclShareTheCommunicator) {
  // Priority, shaping, launch order and the SM target act on streams and launches, not on the
  // communicator: policies that differ only there share one.
  const std::string key = nccl_settings_key(parse_policy("nccl-ctas:..16+nccl-cga:1"));
  for (const char* same : {"priority+nccl-ctas:..16+nccl-cga:1", "shape:3+priority+nccl-cga:1+nccl-ctas:..16",
                           "comm-first+nccl-ctas:..16+nccl-cga:1", "sm-target:120+nccl-cga:1+nccl-ctas:..16"})
    EXPECT_EQ(nccl_settings_key(parse_policy(same)), key) << same;
}

TEST(NcclSettings, CopyEnginesNeverShareWithOtherWindowedSettings) {
  // copy-engine brings CTA policy zero itself: naming it again changes nothing.
  EXPECT_EQ(nccl_settings_key(parse_policy("copy-engine")),
            nccl_settings_key(parse_policy("copy-engine+nccl-cta-policy:zero")));
  // Windows registered by nccl-symmetric under CTA policy zero are not the copy-engine route's windows.
  EXPECT_NE(nccl_settings_key(parse_policy("copy-engine")),
            nccl_settings_key(parse_policy("nccl-symmetric+nccl-cta-policy:zero")));
  EXPECT_NE(nccl_settings_key(parse_policy("copy-engine+nccl-symmetric")),
            nccl_settings_key(parse_policy("nccl-symmetric")));
  // A windowed policy never shares with the same settings without windows.
  EXPECT_NE(nccl_settings_key(parse_policy("nccl-symmetric+nccl-cga:1")),
            nccl_settings_key(parse_policy("nccl-cga:1")));
  EXPECT_NE(nccl_settings_key(parse_policy("copy-engine")), nccl_settings_key(parse_policy("nccl-cta-policy:zero")));
}

// ---- apply_nccl_settings: what reaches ncclConfig_t ---------------------------------------------

ncclConfig_t applied(const std::string& policy, ncclConfig_t config = NCCL_CONFIG_INITIALIZER) {
  apply_nccl_settings(parse_policy(policy), config);
  return config;
}

TEST(NcclSettings, EachSettingWritesItsField) {
  const ncclConfig_t initial = NCCL_CONFIG_INITIALIZER;
  const ncclConfig_t c = applied("nccl-ctas:3..12+nccl-cga:2+nccl-cta-policy:efficiency");
  EXPECT_EQ(c.minCTAs, 3);
  EXPECT_EQ(c.maxCTAs, 12);
  EXPECT_EQ(c.cgaClusterSize, 2);
  EXPECT_EQ(c.CTAPolicy, NCCL_CTA_POLICY_EFFICIENCY);
  EXPECT_EQ(c.blocking, initial.blocking);
  EXPECT_EQ(c.netName, initial.netName);

  const ncclConfig_t min_only = applied("nccl-ctas:5..");
  EXPECT_EQ(min_only.minCTAs, 5);
  EXPECT_EQ(min_only.maxCTAs, initial.maxCTAs);
  const ncclConfig_t max_only = applied("nccl-ctas:..7");
  EXPECT_EQ(max_only.minCTAs, initial.minCTAs);
  EXPECT_EQ(max_only.maxCTAs, 7);
  EXPECT_EQ(applied("nccl-cta-policy:zero").CTAPolicy, NCCL_CTA_POLICY_ZERO);
  EXPECT_EQ(applied("copy-engine").CTAPolicy, NCCL_CTA_POLICY_ZERO);
}

TEST(NcclSettings, WhatThePolicyDoesNotNameStaysTheCallers) {
  ncclConfig_t mine = NCCL_CONFIG_INITIALIZER;
  mine.blocking = 0;
  mine.netName = "Socket";
  mine.minCTAs = 2;
  mine.maxCTAs = 30;
  mine.cgaClusterSize = 4;
  mine.CTAPolicy = NCCL_CTA_POLICY_EFFICIENCY;
  for (const auto& text : kNoSettings) {
    const ncclConfig_t c = applied(text, mine);
    EXPECT_EQ(c.minCTAs, 2) << text;
    EXPECT_EQ(c.maxCTAs, 30) << text;
    EXPECT_EQ(c.cgaClusterSize, 4) << text;
    EXPECT_EQ(c.CTAPolicy, NCCL_CTA_POLICY_EFFICIENCY) << text;
  }
  const ncclConfig_t cga = applied("nccl-cga:1+priority", mine);
  EXPECT_EQ(cga.cgaClusterSize, 1);
  EXPECT_EQ(cga.minCTAs, 2);
  EXPECT_EQ(cga.maxCTAs, 30);
  EXPECT_EQ(cga.CTAPolicy, NCCL_CTA_POLICY_EFFICIENCY);
  EXPECT_EQ(cga.blocking, 0);
  EXPECT_STREQ(cga.netName, "Socket");
  // nccl-symmetric registers windows and changes no field.
  const ncclConfig_t symmetric = applied("nccl-symmetric", mine);
  EXPECT_EQ(symmetric.CTAPolicy, NCCL_CTA_POLICY_EFFICIENCY);
  EXPECT_EQ(symmetric.cgaClusterSize, 4);
}

}  // namespace
