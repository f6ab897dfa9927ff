// A policy's NCCL communicator settings (tandem/nccl_config.h): which policies the caller's own
// communicator serves (uses_default_nccl_settings), which ones can share one communicator
// (nccl_settings_key), and what each setting writes into an ncclConfig_t (apply_nccl_settings).
// Every field is checked on its own: a policy that differs from another in that field alone must
// get a communicator of its own, and one that differs in no NCCL field must share. Expectations come
// from NCCL's fields and the policy grammar, not from the code.
#include <gtest/gtest.h>
#include <nccl.h>

#include <iterator>
#include <string>
#include <vector>

#include "tandem/nccl_config.h"
#include "tandem/policy.h"
#include "tandem/policy_tokens.h"

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

// ---- the token table's NCCL facts (NcclField) reach ncclConfig_t by name -----------------------------

TEST(NcclSettings, EveryFieldTheTokenTableNamesIsAMemberOfThisNccl) {
  // A name the table gives that nccl.h lacks would make apply_nccl_settings throw for that token.
  size_t fields = 0;
  for (const tandem::PolicyToken& token : tandem::policy_tokens())
    for (const tandem::NcclField& f : token.nccl) {
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      int* member = tandem::nccl_config_field(config, f.config_field);
      ASSERT_NE(member, nullptr) << token.keyword << ": ncclConfig_t." << f.config_field;
      *member = 12345;
      EXPECT_EQ(*tandem::nccl_config_field(config, f.config_field), 12345) << f.config_field;
      ++fields;
    }
  EXPECT_EQ(fields, 5u);  // minCTAs, maxCTAs, cgaClusterSize, CTAPolicy (nccl-cta-policy), CTAPolicy (copy-engine)
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  EXPECT_EQ(tandem::nccl_config_field(config, "minCTAs"), &config.minCTAs);
  EXPECT_EQ(tandem::nccl_config_field(config, "CTAPolicy"), &config.CTAPolicy);
  EXPECT_EQ(tandem::nccl_config_field(config, "nvlsCTAs"), &config.nvlsCTAs);
  EXPECT_EQ(tandem::nccl_config_field(config, "netName"), nullptr);  // not an int
  EXPECT_EQ(tandem::nccl_config_field(config, "mincTAs"), nullptr);
}

TEST(NcclSettings, NcclsFactsOfEachToken) {
  // Written out from NCCL's documentation and init.cc (envConfigOverride), not read from the table.
  struct Fact {
    const char* token;
    const char* field;
    const char* variable;
    int min_version;
    const char* pytorch_option;
    tandem::NcclScope scope;
  };
  const Fact expected[] = {
      {"nccl-ctas", "minCTAs", "NCCL_MIN_CTAS", 21700, "min_ctas", tandem::NcclScope::Program},
      {"nccl-ctas", "maxCTAs", "NCCL_MAX_CTAS", 21700, "max_ctas", tandem::NcclScope::Program},
      {"nccl-cga", "cgaClusterSize", "NCCL_CGA_CLUSTER_SIZE", 21700, "cga_cluster_size", tandem::NcclScope::Program},
      {"nccl-cta-policy", "CTAPolicy", "NCCL_CTA_POLICY", 22700, "cta_policy", tandem::NcclScope::Program},
      {"copy-engine", "CTAPolicy", "NCCL_CTA_POLICY", 22800, "cta_policy", tandem::NcclScope::Own},
  };
  size_t i = 0;
  for (const tandem::PolicyToken& token : tandem::policy_tokens())
    for (const tandem::NcclField& f : token.nccl) {
      ASSERT_LT(i, std::size(expected));
      const Fact& e = expected[i++];
      EXPECT_EQ(token.keyword, e.token);
      EXPECT_EQ(f.config_field, e.field);
      EXPECT_EQ(f.variable, e.variable);
      EXPECT_EQ(f.min_version, e.min_version);
      EXPECT_EQ(f.pytorch_option, e.pytorch_option);
      EXPECT_EQ(f.scope, e.scope) << e.token;
    }
  EXPECT_EQ(i, std::size(expected));
  // CTA policy zero came with NCCL 2.28; efficiency with the field, in 2.27.
  const tandem::NcclField& cta = tandem::find_policy_token("nccl-cta-policy")->nccl.at(0);
  EXPECT_EQ(cta.min_version_for(NCCL_CTA_POLICY_ZERO), 22800);
  EXPECT_EQ(cta.min_version_for(NCCL_CTA_POLICY_EFFICIENCY), 22700);
  EXPECT_EQ(tandem::nccl_version_text(22800), "2.28");
  EXPECT_EQ(tandem::nccl_version_text(21700), "2.17");
}

TEST(NcclSettings, FieldValuesOnceEachTheLaterRowWinning) {
  using tandem::NcclScope;
  const auto names = [](const OverlapPolicy& p, NcclScope scope) {
    std::vector<std::string> out;
    for (const tandem::NcclFieldValue& v : tandem::nccl_field_values(p, scope))
      out.push_back(std::string(v.field->config_field) + "=" + std::to_string(v.value) + " by " +
                    std::string(v.token->keyword));
    return out;
  };
  const OverlapPolicy all = parse_policy("nccl-ctas:2..16+nccl-cga:1+nccl-cta-policy:efficiency+copy-engine");
  // copy-engine's zero wins the field nccl-cta-policy also writes, on tandem's own communicators.
  EXPECT_EQ(names(all, NcclScope::Own),
            (std::vector<std::string>{"minCTAs=2 by nccl-ctas", "maxCTAs=16 by nccl-ctas",
                                      "cgaClusterSize=1 by nccl-cga", "CTAPolicy=2 by copy-engine"}));
  // A program's communicators take the explicit CTA policy alone.
  EXPECT_EQ(names(all, NcclScope::Program),
            (std::vector<std::string>{"minCTAs=2 by nccl-ctas", "maxCTAs=16 by nccl-ctas",
                                      "cgaClusterSize=1 by nccl-cga", "CTAPolicy=1 by nccl-cta-policy"}));
  EXPECT_TRUE(names(parse_policy("copy-engine"), NcclScope::Program).empty());
  EXPECT_TRUE(names(parse_policy("priority+shape:2+nccl-symmetric"), NcclScope::Own).empty());
  EXPECT_EQ(applied("nccl-cta-policy:efficiency+copy-engine").CTAPolicy, NCCL_CTA_POLICY_ZERO);
}

}  // namespace
