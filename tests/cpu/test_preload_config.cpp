// The interposer's configuration: every TANDEM_* variable, its default and its bad values.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "preload/config.h"
#include "tandem/run_contract.h"
#include "tandem/text.h"

namespace tandem::preload {
namespace {

PreloadConfig parse(const std::map<std::string, std::string>& vars, long pid = 4242) {
  return parse_config(
      [&](const char* name) -> std::optional<std::string> {
        const auto it = vars.find(name);
        if (it == vars.end()) return std::nullopt;
        return it->second;
      },
      pid);
}

bool has_problem(const PreloadConfig& c, LogLevel level, const std::string& fragment) {
  for (const auto& p : c.problems)
    if (p.level == level && p.message.find(fragment) != std::string::npos) return true;
  return false;
}

TEST(preload_config, DefaultsWithEmptyEnvironment) {
  const PreloadConfig c = parse({});
  EXPECT_EQ(c.policy_text, env::kDefaultPolicy);
  EXPECT_TRUE(c.policy_valid);
  EXPECT_TRUE(c.policy.comm_priority);
  EXPECT_EQ(c.policy.shape.kind, ShapeTarget::Kind::None);
  EXPECT_FALSE(c.sm_target());
  EXPECT_TRUE(c.elevates_collectives());
  EXPECT_FALSE(c.shapes_compute());
  EXPECT_TRUE(c.controls_active());
  EXPECT_EQ(c.log_level, LogLevel::Warn);
  EXPECT_FALSE(c.targets_compute());
  EXPECT_STREQ(c.compute_controls(), "");
  EXPECT_TRUE(c.include_patterns.empty());
  EXPECT_TRUE(c.exclude_patterns.empty());
  EXPECT_TRUE(c.stats_file.empty());
  EXPECT_FALSE(c.root_pid);
  EXPECT_TRUE(c.problems.empty());
}

TEST(preload_config, PolicyWithShapingAndPriority) {
  const PreloadConfig c = parse({{"TANDEM_POLICY", "shape:2+priority"}});
  EXPECT_TRUE(c.policy_valid);
  EXPECT_TRUE(c.policy.comm_priority);
  EXPECT_EQ(c.policy.shape.kind, ShapeTarget::Kind::BlocksPerSm);
  EXPECT_EQ(c.policy.shape.blocks_per_sm, 2);
  EXPECT_TRUE(c.shapes_compute());
  EXPECT_TRUE(c.problems.empty());
}

TEST(preload_config, PolicyShapeBytesAndAuto) {
  const PreloadConfig bytes = parse({{"TANDEM_POLICY", "shape:48KiB"}});
  EXPECT_EQ(bytes.policy.shape.kind, ShapeTarget::Kind::Bytes);
  EXPECT_EQ(bytes.policy.shape.bytes, 48 * 1024);
  EXPECT_FALSE(bytes.elevates_collectives());
  const PreloadConfig autoshape = parse({{"TANDEM_POLICY", " shape:auto "}});
  EXPECT_EQ(autoshape.policy.shape.kind, ShapeTarget::Kind::Auto);
}

TEST(preload_config, SmTargetIsALibraryControlNotALaunchControl) {
  const PreloadConfig c = parse({{"TANDEM_POLICY", "sm-target:116"}});
  ASSERT_TRUE(c.sm_target());
  EXPECT_EQ(*c.sm_target(), 116);
  EXPECT_FALSE(c.controls_active());
}

TEST(preload_config, ConcurrentMeansNoControls) {
  const PreloadConfig c = parse({{"TANDEM_POLICY", "concurrent"}});
  EXPECT_TRUE(c.policy_valid);
  EXPECT_FALSE(c.controls_active());
  EXPECT_FALSE(c.sm_target());
}

TEST(preload_config, EmptyPolicyMeansDefault) {
  EXPECT_EQ(parse({{"TANDEM_POLICY", ""}}).policy_text, env::kDefaultPolicy);
  EXPECT_EQ(parse({{"TANDEM_POLICY", "   "}}).policy_text, env::kDefaultPolicy);
}

TEST(preload_config, InvalidPolicyDisablesEveryControlWithOneError) {
  const PreloadConfig c = parse({{"TANDEM_POLICY", "shape:2+bogus"}});
  EXPECT_FALSE(c.policy_valid);
  EXPECT_EQ(c.policy_text, "shape:2+bogus");
  EXPECT_FALSE(c.controls_active());
  EXPECT_FALSE(c.sm_target());
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_EQ(c.problems[0].level, LogLevel::Error);
  EXPECT_NE(c.problems[0].message.find("TANDEM_POLICY='shape:2+bogus'"), std::string::npos);
  EXPECT_NE(c.problems[0].message.find("no controls"), std::string::npos);
  EXPECT_NE(c.problems[0].message.find("bogus"), std::string::npos);
  // The message is for users: no source location.
  EXPECT_EQ(c.problems[0].message.find(".cpp:"), std::string::npos);
}

TEST(preload_config, TokensAnInterposerCannotApplyAreReportedAndDropped) {
  const PreloadConfig c = parse({{"TANDEM_POLICY", "comm-first+priority"}});
  EXPECT_TRUE(c.policy_valid);
  EXPECT_TRUE(c.policy.comm_priority);
  EXPECT_EQ(c.policy.order, LaunchOrder::ComputeFirst);
  EXPECT_TRUE(has_problem(c, LogLevel::Warn, "comm-first"));

  EXPECT_TRUE(has_problem(parse({{"TANDEM_POLICY", "sequential"}}), LogLevel::Warn, "sequential"));
  EXPECT_TRUE(has_problem(parse({{"TANDEM_POLICY", "green:100"}}), LogLevel::Warn, "green:100"));
}

TEST(preload_config, CopyEngineIsKeptForTheInterposersRoute) {
  // The interposer runs eligible collectives on the copy-engine route (nccl_copy_engine.h): the token
  // stays in the policy, with nothing reported.
  const PreloadConfig c = parse({{"TANDEM_POLICY", "priority+copy-engine"}});
  EXPECT_TRUE(c.policy_valid);
  EXPECT_TRUE(c.policy.copy_engine);
  EXPECT_TRUE(c.policy.comm_priority);
  EXPECT_FALSE(has_problem(c, LogLevel::Warn, "copy-engine"));
}

TEST(preload_config, NcclTokensAreAppliedByTheInterposerAtCommunicatorCreation) {
  const PreloadConfig c = parse({{"TANDEM_POLICY", "priority+nccl-cga:1+nccl-ctas:2..16"}});
  EXPECT_TRUE(c.policy_valid);
  EXPECT_TRUE(c.problems.empty());  // nothing ignored, nothing to note
  EXPECT_EQ(c.policy.nccl_cga_cluster_size, 1);
  EXPECT_EQ(c.policy.nccl_min_ctas, 2);
  EXPECT_EQ(c.policy.nccl_max_ctas, 16);
}

TEST(preload_config, InterposablePartKeepsPriorityShapeSmTargetAndNcclSettings) {
  OverlapPolicy p = parse_policy("priority+shape:3+sm-target:100+nccl-cga:2");
  std::vector<IgnoredToken> ignored;
  const OverlapPolicy applied = interposable_part(p, &ignored);
  EXPECT_TRUE(applied.comm_priority);
  EXPECT_EQ(applied.shape.blocks_per_sm, 3);
  EXPECT_EQ(applied.sm_target, 100);
  EXPECT_EQ(applied.nccl_cga_cluster_size, 2);
  EXPECT_TRUE(ignored.empty());
}

// The names docs/ENVIRONMENT.md documents, written out here rather than read from the parser's own
// table (which a test would then only compare with itself).
TEST(preload_config, EveryLogLevel) {
  const std::pair<const char*, LogLevel> documented[] = {
      {"error", LogLevel::Error}, {"warn", LogLevel::Warn}, {"info", LogLevel::Info}, {"debug", LogLevel::Debug}};
  for (const auto& [name, level] : documented) {
    const PreloadConfig c = parse({{"TANDEM_LOG_LEVEL", name}});
    EXPECT_EQ(c.log_level, level) << name;
    EXPECT_STREQ(to_string(c.log_level), name);
    EXPECT_TRUE(c.problems.empty()) << name;
  }
  EXPECT_EQ(parse({{"TANDEM_LOG_LEVEL", " debug\n"}}).log_level, LogLevel::Debug);
  EXPECT_EQ(parse({{"TANDEM_LOG_LEVEL", ""}}).log_level, LogLevel::Warn);
}

TEST(preload_config, BadLogLevelWarnsAndKeepsWarn) {
  for (const char* bad : {"loud", "INFO", "3", "warning"}) {
    const PreloadConfig c = parse({{"TANDEM_LOG_LEVEL", bad}});
    EXPECT_EQ(c.log_level, LogLevel::Warn) << bad;
    EXPECT_TRUE(has_problem(c, LogLevel::Warn, "TANDEM_LOG_LEVEL")) << bad;
  }
}

TEST(preload_config, ComputeControlsAreTargetedUnlessComputeAlways) {
  for (const char* policy : {"shape:2", "sm-target:96", "shape:auto+priority", "shape:4+sm-target:100"}) {
    const PreloadConfig targeted = parse({{"TANDEM_POLICY", policy}});
    EXPECT_TRUE(targeted.targets_compute()) << policy;
    EXPECT_STREQ(targeted.compute_controls(), "targeted") << policy;
    const PreloadConfig always = parse({{"TANDEM_POLICY", std::string(policy) + "+compute-always"}});
    EXPECT_FALSE(always.targets_compute()) << policy;
    EXPECT_STREQ(always.compute_controls(), "always") << policy;
    EXPECT_EQ(always.shapes_compute(), targeted.shapes_compute()) << policy;
  }
  // Without a compute-side control there is nothing to target.
  for (const char* policy : {"priority", "copy-engine", "nccl-ctas:2..8"}) {
    EXPECT_FALSE(parse({{"TANDEM_POLICY", policy}}).targets_compute()) << policy;
    EXPECT_STREQ(parse({{"TANDEM_POLICY", policy}}).compute_controls(), "") << policy;
  }
  // compute-always alone is refused by the policy grammar: an invalid policy applies no control.
  const PreloadConfig alone = parse({{"TANDEM_POLICY", "compute-always"}});
  EXPECT_FALSE(alone.policy_valid);
  EXPECT_TRUE(has_problem(alone, LogLevel::Error, "has nothing to apply"));
}

TEST(preload_config, RoutePoolCap) {
  EXPECT_EQ(parse({}).route_pool_max_bytes, uint64_t{256} << 20);
  EXPECT_EQ(parse({{"TANDEM_ROUTE_POOL_MAX", "1G"}}).route_pool_max_bytes, uint64_t{1} << 30);
  EXPECT_EQ(parse({{"TANDEM_ROUTE_POOL_MAX", " 64MiB "}}).route_pool_max_bytes, uint64_t{64} << 20);
  EXPECT_EQ(parse({{"TANDEM_ROUTE_POOL_MAX", "4096"}}).route_pool_max_bytes, 4096u);
  EXPECT_EQ(parse({{"TANDEM_ROUTE_POOL_MAX", "0"}}).route_pool_max_bytes, 0u);  // no cap
  for (const char* bad : {"lots", "-1", "1.5G", "12TiB", "2048G", "1 G", "G"}) {
    const PreloadConfig c = parse({{"TANDEM_ROUTE_POOL_MAX", bad}});
    EXPECT_EQ(c.route_pool_max_bytes, uint64_t{256} << 20) << bad;
    EXPECT_TRUE(has_problem(c, LogLevel::Warn, "TANDEM_ROUTE_POOL_MAX")) << bad;
  }
  EXPECT_TRUE(parse({{"TANDEM_ROUTE_POOL_MAX", "1024G"}}).problems.empty());  // 1 TiB, the most
}

TEST(preload_config, ByteCountsAreDigitsAndABinaryUnit) {
  EXPECT_EQ(parse_byte_count("17", 100), 17u);
  EXPECT_EQ(parse_byte_count("2K", 4096), 2048u);
  EXPECT_EQ(parse_byte_count("3MB", uint64_t{1} << 30), uint64_t{3} << 20);
  EXPECT_FALSE(parse_byte_count("101", 100));
  EXPECT_FALSE(parse_byte_count("5K", 4096));
  EXPECT_FALSE(parse_byte_count("18446744073709551616", UINT64_MAX));  // one past: no wrap
  EXPECT_FALSE(parse_byte_count("17179869185G", UINT64_MAX));
  EXPECT_EQ(parse_byte_count("18446744073709551615", UINT64_MAX), UINT64_MAX);
  for (const char* bad : {"", "K", "1k", "1 K", "0x10", "+1", "1KiBs"})
    EXPECT_FALSE(parse_byte_count(bad, 1 << 20)) << bad;
}

TEST(preload_config, IncludeAndExcludePatterns) {
  const PreloadConfig c = parse({{"TANDEM_INCLUDE", " *gemm*, ,ampere_?,,"}, {"TANDEM_EXCLUDE", "ncclDevKernel_*"}});
  EXPECT_EQ(c.include_patterns, (std::vector<std::string>{"*gemm*", "ampere_?"}));
  EXPECT_EQ(c.exclude_patterns, (std::vector<std::string>{"ncclDevKernel_*"}));
  EXPECT_TRUE(parse({{"TANDEM_INCLUDE", ""}}).include_patterns.empty());
  EXPECT_TRUE(split_patterns(",,  ,").empty());
}

TEST(preload_config, StatsFileExpandsPid) {
  EXPECT_EQ(parse({{"TANDEM_STATS_FILE", "/tmp/stats-%p.json"}}, 77).stats_file, "/tmp/stats-77.json");
  EXPECT_EQ(parse({{"TANDEM_STATS_FILE", "/tmp/s.json"}}, 77).stats_file, "/tmp/s.json");
  EXPECT_EQ(parse({{"TANDEM_STATS_FILE", "  "}}, 77).stats_file, "");
  EXPECT_EQ(expand_pid("%p/%p%", 5), "5/5%");
  EXPECT_EQ(expand_pid("a%b", 5), "a%b");
}

TEST(preload_config, RootPid) {
  EXPECT_EQ(parse({{"TANDEM_ROOT_PID", "1234"}}).root_pid, 1234);
  EXPECT_FALSE(parse({{"TANDEM_ROOT_PID", "12x"}}).root_pid);
  EXPECT_FALSE(parse({{"TANDEM_ROOT_PID", "-5"}}).root_pid);
  EXPECT_FALSE(parse({{"TANDEM_ROOT_PID", ""}}).root_pid);
}

TEST(preload_config, ParsersAcceptExactlyTheDocumentedNames) {
  EXPECT_EQ(parse_log_level("error"), LogLevel::Error);
  EXPECT_EQ(parse_log_level("warn"), LogLevel::Warn);
  EXPECT_EQ(parse_log_level("info"), LogLevel::Info);
  EXPECT_EQ(parse_log_level("debug"), LogLevel::Debug);
  // Exactly those: the tables hold nothing more.
  EXPECT_EQ(env::kLogLevelNames.size(), 4u);
  EXPECT_FALSE(parse_log_level("trace"));
  EXPECT_FALSE(parse_log_level("Warn"));
}

}  // namespace
}  // namespace tandem::preload
