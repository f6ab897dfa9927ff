#include "config.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "tandem/enum_table.h"
#include "tandem/error.h"
#include "tandem/policy_tokens.h"
#include "tandem/printable.h"
#include "tandem/run_contract.h"
#include "tandem/text.h"

namespace tandem::preload {
namespace {

// tandem::Error messages end in " [file:line]"; users get the message alone.
std::string without_location(const std::string& message) {
  const size_t at = message.rfind(" [");
  return at == std::string::npos ? message : message.substr(0, at);
}

void parse_policy_variable(const std::optional<std::string>& value, PreloadConfig& config) {
  config.policy_text = value && !trim(*value).empty() ? std::string(trim(*value)) : env::kDefaultPolicy;
  // The interposer never reads a file: it runs in every process of the job, at exit too, where a
  // FIFO or /dev/zero would hang it and a relative path or /dev/stdin means something else in each
  // process. `tandem run --policy @FILE` reads the file once and passes the policy text.
  if (config.policy_text.front() == '@') {
    config.policy_valid = false;
    config.policy = OverlapPolicy{};
    config.problems.push_back({LogLevel::Error, std::string(env::kPolicy) + "=" + quoted_value(config.policy_text) +
                                                    " names a file, running with no controls: the interposer "
                                                    "reads no files; give the policy text, or use `tandem run "
                                                    "--policy @FILE`, which reads it"});
    return;
  }
  OverlapPolicy parsed;
  try {
    parsed = parse_policy(config.policy_text);
  } catch (const std::exception& e) {
    config.policy_valid = false;
    config.policy = OverlapPolicy{};  // no controls at all
    config.problems.push_back(
        {LogLevel::Error, std::string(env::kPolicy) + "=" + quoted_value(config.policy_text) +
                              " is invalid, running with no controls: " + printable(without_location(e.what()))});
    return;
  }
  std::vector<IgnoredToken> ignored;
  config.policy = interposable_part(parsed, &ignored);
  for (const auto& token : ignored)
    config.problems.push_back({LogLevel::Warn, "policy token '" + token.token + "' " + token.reason});
}

// A launcher's rank: the first of env::kRankVariables that holds a non-negative integer.
std::optional<int> launcher_rank(const EnvironmentLookup& lookup) {
  for (const char* name : env::kRankVariables) {
    const auto value = lookup(name);
    if (!value || value->empty()) continue;
    char* end = nullptr;
    const long rank = std::strtol(value->c_str(), &end, 10);
    if (end && *end == '\0' && rank >= 0 && rank <= 1 << 24) return static_cast<int>(rank);
  }
  return std::nullopt;
}

// A variable naming one of `names`: its value when it does; otherwise a warning and `value` kept,
// which `otherwise` describes. Unset or blank: `value` kept, silently.
template <class Enum, size_t N>
void read_choice(const EnvironmentLookup& lookup, const char* variable, const std::array<const char*, N>& names,
                 const char* otherwise, Enum& value, PreloadConfig& config) {
  const auto text = lookup(variable);
  if (!text || trim(*text).empty()) return;
  if (const auto parsed = parse_entry<Enum>(names, trim(*text))) {
    value = *parsed;
    return;
  }
  config.problems.push_back({LogLevel::Warn, std::string(variable) + "=" + quoted_value(*text) + " is not one of " +
                                                 join(std::vector<std::string>(names.begin(), names.end()), "|") +
                                                 "; " + otherwise});
}

void parse_timeline_variables(const EnvironmentLookup& lookup, long pid, PreloadConfig& config) {
  read_choice(lookup, env::kTimeline, env::kTimelineModeNames, "no timeline", config.timeline, config);
  if (const auto dir = lookup(env::kTimelineDir); dir && !trim(*dir).empty())
    config.timeline_dir = expand_pid(trim(*dir), pid);
  if (const auto pattern = lookup(env::kStepRange)) config.step_range = std::string(trim(*pattern));
  if (const auto tool = lookup(env::kCudaInjection)) config.cuda_injection = std::string(trim(*tool));
  if (const auto nvtx = lookup(env::kNvtxInjection)) config.nvtx_injection = std::string(trim(*nvtx));
  config.rank = launcher_rank(lookup);
}

// The NCCL variables that override what the policy's nccl-* tokens write into a communicator's
// configuration: NCCL reads them after the configuration and lets them win.
void find_overriding_nccl_variables(const EnvironmentLookup& lookup, PreloadConfig& config) {
  // The fields the policy writes into the program's communicators, each with its variable (the token
  // table's NcclField).
  for (const NcclFieldValue& v : nccl_field_values(config.policy, NcclScope::Program)) {
    const std::string variable(v.field->variable);
    const auto value = lookup(variable.c_str());
    if (value && !value->empty()) config.nccl_variables.push_back(variable + "=" + printable(*value, 40));
  }
  if (config.nccl_variables.empty()) return;
  config.problems.push_back(
      {LogLevel::Warn, "NCCL's variables win over the policy's nccl-* settings: " + join(config.nccl_variables, ", ") +
                           " (unset them to let the policy configure the communicators)"});
}

}  // namespace

std::optional<LogLevel> parse_log_level(std::string_view text) {
  return parse_entry<LogLevel>(env::kLogLevelNames, trim(text));
}
const char* to_string(LogLevel level) { return table_entry(env::kLogLevelNames, level); }
const char* to_string(TimelineMode mode) { return table_entry(env::kTimelineModeNames, mode); }

std::vector<std::string> split_patterns(std::string_view text) {
  std::vector<std::string> patterns;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    if (!item.empty()) patterns.emplace_back(item);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return patterns;
}

std::string expand_pid(std::string_view path, long pid) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 1 < path.size() && path[i + 1] == 'p') {
      out += std::to_string(pid);
      ++i;
    } else {
      out += path[i];
    }
  }
  return out;
}

// The note logged for a token the interposer leaves alone, from its row (tandem/policy_tokens.h).
std::string interposer_note(const PolicyToken& row) {
  return "has no effect on an unmodified program: " + std::string(row.run_detail);
}

OverlapPolicy interposable_part(const OverlapPolicy& policy, std::vector<IgnoredToken>* ignored) {
  OverlapPolicy applied = policy;
  for (const PolicyToken& row : policy_tokens()) {
    if (row.run == RunTreatment::Interposer || row.run == RunTreatment::AsIs) continue;
    const std::string token = row.print(policy);
    if (token.empty()) continue;
    row.clear(applied);
    if (ignored) ignored->push_back({token, interposer_note(row)});
  }
  return applied;
}

PreloadConfig parse_config(const EnvironmentLookup& lookup, long pid) {
  PreloadConfig config;
  parse_policy_variable(lookup(env::kPolicy), config);
  find_overriding_nccl_variables(lookup, config);

  read_choice(lookup, env::kLogLevel, env::kLogLevelNames, "using warn", config.log_level, config);
  if (const auto cap = lookup(env::kRoutePoolMax); cap && !trim(*cap).empty()) {
    // At most 1 TiB: more than any GPU's memory, and far from size_t's end.
    if (const auto bytes = parse_byte_count(trim(*cap), uint64_t{1} << 40))
      config.route_pool_max_bytes = *bytes;
    else
      config.problems.push_back({LogLevel::Warn, std::string(env::kRoutePoolMax) + "=" + quoted_value(*cap) +
                                                     " is not a byte count (256MiB, 1G, 0 for no cap); using 256MiB"});
  }
  if (const auto include = lookup(env::kInclude)) config.include_patterns = split_patterns(*include);
  if (const auto exclude = lookup(env::kExclude)) config.exclude_patterns = split_patterns(*exclude);
  if (const auto stats = lookup(env::kStatsFile); stats && !trim(*stats).empty())
    config.stats_file = expand_pid(trim(*stats), pid);
  if (const auto earlier = lookup(env::kStatsEarlier); earlier && !earlier->empty()) {
    unsigned long long device = 0, inode = 0;
    char end = 0;
    if (std::sscanf(earlier->c_str(), "%llu:%llu%c", &device, &inode, &end) == 2)
      config.stats_earlier = std::make_pair(device, inode);
  }
  if (const auto root = lookup(env::kRootPid); root && !root->empty()) {
    char* end = nullptr;
    const long value = std::strtol(root->c_str(), &end, 10);
    if (end && *end == '\0' && value > 0) config.root_pid = value;
  }
  if (const auto blocking = lookup("NCCL_COMM_BLOCKING"); blocking && (*blocking == "0" || *blocking == "1"))
    config.nccl_comm_blocking = *blocking == "1" ? 1 : 0;
  parse_timeline_variables(lookup, pid, config);
  return config;
}

PreloadConfig config_from_environment() {
  return parse_config(
      [](const char* name) -> std::optional<std::string> {
        const char* value = std::getenv(name);
        if (!value) return std::nullopt;
        return std::string(value);
      },
      static_cast<long>(getpid()));
}

}  // namespace tandem::preload
