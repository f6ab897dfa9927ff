// The interposer's configuration: every TANDEM_* variable, its default and its bad values.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "preload/config.h"
#include "tandem/run_contract.h"

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
  EXPECT_EQ(c.shape_when, ShapeWhen::Always);
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

TEST(preload_config, ShapeWhen) {
  EXPECT_EQ(parse({{"TANDEM_SHAPE_WHEN", "always"}}).shape_when, ShapeWhen::Always);
  EXPECT_EQ(parse({{"TANDEM_SHAPE_WHEN", "in-flight"}}).shape_when, ShapeWhen::InFlight);
  EXPECT_STREQ(to_string(ShapeWhen::InFlight), "in-flight");
  const PreloadConfig bad = parse({{"TANDEM_SHAPE_WHEN", "sometimes"}});
  EXPECT_EQ(bad.shape_when, ShapeWhen::Always);
  EXPECT_TRUE(has_problem(bad, LogLevel::Warn, "TANDEM_SHAPE_WHEN"));
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
  EXPECT_EQ(parse_shape_when("always"), ShapeWhen::Always);
  EXPECT_EQ(parse_shape_when("in-flight"), ShapeWhen::InFlight);
  // Exactly those: the tables hold nothing more.
  EXPECT_EQ(env::kLogLevelNames.size(), 4u);
  EXPECT_EQ(env::kShapeWhenNames.size(), 2u);
  EXPECT_FALSE(parse_log_level("trace"));
  EXPECT_FALSE(parse_log_level("Warn"));
  EXPECT_FALSE(parse_shape_when("never"));
  EXPECT_FALSE(parse_shape_when("inflight"));
}

}  // namespace
}  // namespace tandem::preload
