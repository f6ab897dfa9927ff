// The interposer's configuration (preload/config.cpp, parse_config) from an
// environment written as NAME=VALUE lines. It runs inside every program under
// `tandem run`, so it must never throw or crash: a bad value becomes a problem
// line and the variable keeps its default. Asserted: the policy applied is
// exactly the interposable part of TANDEM_POLICY (or nothing when it is
// invalid) and survives the round trip, patterns are trimmed and non-empty,
// "%p" is always expanded. A TANDEM_POLICY of '@FILE' would read the machine's
// files: fuzz_policy_file covers that.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "fuzz_common.h"
#include "policy_round_trip.h"
#include "preload/config.h"
#include "tandem/error.h"
#include "tandem/policy.h"
#include "tandem/run_contract.h"

namespace {

using tandem::preload::PreloadConfig;

constexpr long kPid = 4242;

void check_patterns(const std::vector<std::string>& patterns, const std::string& input) {
  for (const std::string& pattern : patterns) {
    FUZZ_CHECK(!pattern.empty() && pattern.find(',') == std::string::npos, input);
    FUZZ_CHECK(pattern.front() != ' ' && pattern.back() != ' ', input);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input = tandem_fuzz::text_of(data, size);
  const std::map<std::string, std::string> variables = tandem_fuzz::environment_of(input, [](std::string_view) {});
  const auto policy_variable = variables.find(tandem::preload::env::kPolicy);
  if (policy_variable != variables.end() && policy_variable->second.find('@') != std::string::npos) return -1;

  const PreloadConfig config = tandem::preload::parse_config(
      [&](const char* name) -> std::optional<std::string> {
        const auto it = variables.find(name);
        if (it == variables.end()) return std::nullopt;
        return it->second;
      },
      kPid);

  // The policy: recomputed from the text the configuration says it read.
  std::optional<tandem::OverlapPolicy> parsed;
  try {
    parsed = tandem::parse_policy(config.policy_text);
  } catch (const tandem::Error&) {
  }
  FUZZ_CHECK(config.policy_valid == parsed.has_value(), input);
  if (parsed) {
    FUZZ_CHECK(config.policy == tandem::preload::interposable_part(*parsed, nullptr), input);
    tandem_fuzz::check_policy_round_trip(config.policy, input);
  } else {
    FUZZ_CHECK(config.policy == tandem::OverlapPolicy{}, input);
    bool error_logged = false;
    for (const auto& problem : config.problems)
      error_logged = error_logged || problem.level == tandem::preload::LogLevel::Error;
    FUZZ_CHECK(error_logged, input);
  }
  // Only what an interposer can apply to an unmodified program (the nccl-* settings it applies at
  // communicator creation; copy-engine it counts; symmetric windows it cannot register).
  FUZZ_CHECK(config.policy.order == tandem::LaunchOrder::ComputeFirst && !config.policy.nccl_symmetric &&
                 !config.policy.green_sms,
             input);

  const int level = static_cast<int>(config.log_level);
  FUZZ_CHECK(level >= 0 && level <= 3, input);
  FUZZ_CHECK(tandem::preload::parse_log_level(tandem::preload::to_string(config.log_level)) == config.log_level, input);
  FUZZ_CHECK(!config.targets_compute() || config.shapes_compute() || config.sm_target(), input);
  check_patterns(config.include_patterns, input);
  check_patterns(config.exclude_patterns, input);
  FUZZ_CHECK(config.stats_file.find("%p") == std::string::npos, input);
  FUZZ_CHECK(!config.root_pid || *config.root_pid > 0, input);
  for (const auto& problem : config.problems) FUZZ_CHECK(!problem.message.empty(), input);
  return 0;
}
