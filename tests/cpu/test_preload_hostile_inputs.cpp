// The interposer's answers to hostile values (docs/RELIABILITY.md): environment variables with
// escapes and invalid UTF-8, NCCL variables that override the policy, CTA bounds of the program's that
// contradict the policy's, collective sizes whose byte totals would wrap.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "preload/config.h"
#include "preload/nccl_settings.h"
#include "preload/stats.h"
#include "tandem/printable.h"
#include "test_preload_paths.h"
#include "test_run_contract_shell.h"

namespace tandem::preload {
namespace {

using tandem_run_contract_test::run_shell;
using tandem_run_contract_test::ScratchFolder;
using tandem_run_contract_test::sh_quoted;
using tandem_test::read_text;

PreloadConfig parse(const std::map<std::string, std::string>& vars) {
  return parse_config(
      [&](const char* name) -> std::optional<std::string> {
        const auto it = vars.find(name);
        if (it == vars.end()) return std::nullopt;
        return it->second;
      },
      4242);
}

TEST(preload_hostile, EchoedVariablesArePrintable) {
  const auto c = parse({{"TANDEM_POLICY", "shape:2\x1b[31m\n+x"},
                        {"TANDEM_LOG_LEVEL", "loud\x1b]0;title\x07"},
                        {"TANDEM_TIMELINE", std::string("nev\0er", 6)}});
  ASSERT_EQ(c.problems.size(), 3u);
  for (const auto& p : c.problems) EXPECT_TRUE(is_printable(p.message)) << p.message;
  EXPECT_NE(c.problems[0].message.find("TANDEM_POLICY='shape:2\\x1b[31m\\n+x' is invalid"), std::string::npos)
      << c.problems[0].message;
  const auto timeline = parse({{"TANDEM_TIMELINE", "on\x1b[2J"}});
  ASSERT_EQ(timeline.problems.size(), 1u);
  EXPECT_NE(timeline.problems[0].message.find("TANDEM_TIMELINE='on\\x1b[2J' is not one of"), std::string::npos)
      << timeline.problems[0].message;
}

TEST(preload_hostile, NcclVariablesThatOverrideThePolicyAreNamed) {
  const auto c = parse({{"TANDEM_POLICY", "nccl-ctas:..4+nccl-cga:1"},
                        {"NCCL_MAX_CTAS", "16"},
                        {"NCCL_CGA_CLUSTER_SIZE", "4"},
                        {"NCCL_CTA_POLICY", "1"}});  // the policy names no CTA policy: no conflict
  EXPECT_EQ(c.nccl_variables, (std::vector<std::string>{"NCCL_MAX_CTAS=16", "NCCL_CGA_CLUSTER_SIZE=4"}));
  bool warned = false;
  for (const auto& p : c.problems)
    warned = warned || (p.level == LogLevel::Warn &&
                        p.message.find("NCCL's variables win over the policy's nccl-* settings: NCCL_MAX_CTAS=16, "
                                       "NCCL_CGA_CLUSTER_SIZE=4") != std::string::npos);
  EXPECT_TRUE(warned);
  Snapshot s;
  s.communicators_created = 1;
  s.communicator_settings = "nccl-ctas:..4+nccl-cga:1";
  s.nccl_variables = c.nccl_variables;
  EXPECT_NE(
      render_text(s, 10).find("NCCL's variables win over these settings: NCCL_MAX_CTAS=16, NCCL_CGA_CLUSTER_SIZE=4"),
      std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(render_json(s))["nccl_communicators"]["overridden_by_variables"].size(), 2u);
  EXPECT_TRUE(parse({{"TANDEM_POLICY", "priority"}, {"NCCL_MAX_CTAS", "16"}}).nccl_variables.empty());
}

TEST(preload_hostile, TheProgramsCtaBoundsFollowThePolicys) {
  ncclConfig_t program = NCCL_CONFIG_INITIALIZER;
  program.minCTAs = 32;
  auto c = overlay_config(parse_policy("nccl-ctas:..4"), &program);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->get()->minCTAs, 4);  // clamped to the policy's maximum
  EXPECT_EQ(c->get()->maxCTAs, 4);
  program = NCCL_CONFIG_INITIALIZER;
  program.maxCTAs = 2;
  c = overlay_config(parse_policy("nccl-ctas:8.."), &program);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->get()->minCTAs, 8);
  EXPECT_EQ(c->get()->maxCTAs, 8);  // raised to the policy's minimum
  program = NCCL_CONFIG_INITIALIZER;
  program.minCTAs = 2;
  c = overlay_config(parse_policy("nccl-ctas:..4"), &program);
  EXPECT_EQ(c->get()->minCTAs, 2);  // consistent already: the program's own bound stays
}

TEST(preload_hostile, ByteTotalsSaturateInsteadOfWrapping) {
  EXPECT_EQ(collective_bytes(Collective::AllGather, SIZE_MAX, 8, 2), kSaturated);
  EXPECT_EQ(collective_bytes(Collective::AllGather, 3, 8, 2), 48u);
  Counters counters;
  counters.count_collective(Collective::AllReduce, RouteOutcome::NotRequested, kSaturated - 10);
  counters.count_collective(Collective::AllReduce, RouteOutcome::NotRequested, 382);
  // Two routes' totals that fit, whose sum does not.
  counters.count_collective(Collective::AllGather, RouteOutcome::NotRequested, kSaturated - 10);
  counters.count_collective(Collective::AllGather, RouteOutcome::CopyEngine, 382);
  Counters::add_saturating(counters.copy_engine_staged_bytes, kSaturated - 1);
  Counters::add_saturating(counters.copy_engine_staged_bytes, 2);
  Snapshot s;
  s.copy_engine_requested = true;
  fill_counters(counters, s);
  ASSERT_EQ(s.collectives.size(), 2u);
  EXPECT_EQ(s.collectives[0].bytes, kSaturated);
  EXPECT_EQ(s.collectives[1].bytes, kSaturated);
  EXPECT_EQ(s.copy_engine_staged_bytes, kSaturated);
  const std::string text = render_text(s, 10);
  EXPECT_NE(text.find("ncclAllReduce: 2 calls, more than 18446744073709551614 B (saturated)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("ncclAllGather: 2 calls, more than 18446744073709551614 B (saturated); copy-engine 1 (382 B)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("more than 18446744073709551614 B (saturated) staged"), std::string::npos) << text;
  const auto j = nlohmann::json::parse(render_json(s));
  EXPECT_EQ(j["nccl_collectives"]["ncclAllReduce"]["bytes_saturated"], true);
  EXPECT_EQ(j["nccl_collectives"]["ncclAllGather"]["bytes_saturated"], true);
  EXPECT_EQ(j["copy_engine_reach"]["total_bytes"], kSaturated);
  EXPECT_EQ(j["copy_engine_reach"]["bytes_saturated"], true);
  EXPECT_EQ(j["schema_version"], kStatsSchemaVersion);
}

// The stats file of a process whose TANDEM_POLICY is not UTF-8: written, valid JSON, the policy escaped.
TEST(preload_hostile, ANonUtf8PolicyStillWritesTheStatsFile) {
  ScratchFolder scratch;
  const std::string stats = scratch.path("s.json").string();
  const auto r = run_shell(
      "sh -c 'exec env TANDEM_ROOT_PID=$$ LD_PRELOAD=" + sh_quoted(tandem_preload_test::preload_library_path()) +
      " TANDEM_POLICY=\"$(printf \"prio\\377rity\")\" TANDEM_LOG_LEVEL=error TANDEM_STATS_FILE=" + stats +
      " /bin/true'");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(read_text(stats));
  EXPECT_EQ(j["policy"], "prio\\xffrity");
  EXPECT_EQ(j["policy_valid"], false);
  EXPECT_EQ(j["schema_version"], kStatsSchemaVersion);
}

}  // namespace
}  // namespace tandem::preload
