// `tandem run [options] -- CMD ARGS...`: runs an unmodified program with the overlap controls applied
// by the LD_PRELOAD interposer (libtandem_preload.so, preload/). tandem prepends the library to
// LD_PRELOAD, describes the policy to it through the TANDEM_* variables (docs/ENVIRONMENT.md), runs
// the program, waits, and exits with the program's status (128 + signal if it was killed).
// docs/RUN.md explains what the interposer does to which launches.
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "command_line.h"
#include "commands.h"
#include "run_child.h"
#include "run_environment.h"
#include "run_stats_check.h"
#include "run_timeline.h"
#include "tandem/error.h"
#include "tandem/policy.h"
#include "tandem/policy_tokens.h"
#include "tandem/run_contract.h"
#include "tandem/safe_file.h"

namespace tandem::cli {
namespace {

namespace env = tandem::preload::env;

template <size_t N>
std::vector<std::string> names(const std::array<const char*, N>& array) {
  return std::vector<std::string>(array.begin(), array.end());
}

void print_environment(const std::vector<EnvChange>& changes) {
  for (const auto& [name, value] : changes)
    std::fprintf(stderr, "tandem run: %s%s%s\n", value ? "" : "unset ", name.c_str(),
                 value ? ("=" + *value).c_str() : "");
}

int run(RunOptions options) {
  // First, before tandem writes anything: a closed stderr or pipe must not end `tandem run`, and
  // the program must still get the signal dispositions `tandem run` was given (run_child.h).
  process::Supervisor supervisor(run_signal_plan());
  // Everything is checked before the program starts. The policy (and an @FILE, read here once) is
  // handed to the interposer as its canonical text: the interposer reads no file.
  // What fails here is the user's input (a policy, a file, TANDEM_PRELOAD_LIB): one plain line.
  const OverlapPolicy policy = checking_input([&] { return policy_for_run(options.policy); });
  options.policy = to_string(policy);
  const std::string library = checking_input([] { return locate_preload_library(); });
  options.stats_file = absolute_path(options.stats_file);
  if (!options.stats_file.empty()) checking_input([&] { require_stats_path(options.stats_file); });
  // A stats file left by an earlier run is kept until this run's replaces it (run_stats_check.h).
  const StatsFileWatch stats_watch(options.stats_file, options.log_level != "error");
  const RunTimeline timeline = checking_input([&] { return prepare_timeline(options); });
  auto environment = child_environment(options, library, std::getenv("LD_PRELOAD"));
  for (auto& change : timeline_environment(timeline, library, std::getenv(env::kNvtxInjection)))
    environment.push_back(std::move(change));
  if (options.log_level == "info" || options.log_level == "debug") print_environment(environment);
  const int status = run_child(supervisor, options.command, environment);
  finish_timeline(timeline, status);
  stats_watch.warn_if_not_rewritten();
  return status;
}

// The tokens `tandem run` applies and how, from their rows (tandem/policy_tokens.h).
std::string run_footer() {
  std::string text =
      "Use -- before the command. Exit status: the command's, or 128+signal if it was killed.\n"
      "Controls it applies:\n";
  for (const PolicyToken& row : policy_tokens())
    if (row.run == RunTreatment::Interposer) text += "  " + row.syntax() + ": " + std::string(row.run_detail) + "\n";
  return text + "Other tokens are refused (docs/POLICIES.md). See docs/RUN.md.";
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "run", "Run a program with the overlap controls applied to its kernel launches (LD_PRELOAD interposer)");
  cmd->footer(run_footer());
  auto options = std::make_shared<RunOptions>();
  options->policy = env::kDefaultPolicy;
  options->log_level = env::kDefaultLogLevel;
  cmd->add_option("--policy", options->policy, "Overlap policy, e.g. priority, shape:2+priority, sm-target:116")
      ->capture_default_str();
  cmd->add_option("--log-level", options->log_level, "Interposer messages: error|warn|info|debug")
      ->check(CLI::IsMember(names(env::kLogLevelNames)))
      ->capture_default_str();
  cmd->add_option("--include", options->include,
                  "Only control kernels whose name matches this glob (repeatable or comma-separated)")
      ->delimiter(',');
  cmd->add_option("--exclude", options->exclude, "Never control kernels whose name matches this glob (repeatable)")
      ->delimiter(',');
  cmd->add_option("--stats", options->stats_file, "Write the interposer's statistics as JSON here (%p: pid)");
  cmd->add_flag("--timeline", options->timeline,
                "Record the program's GPU activity (CUPTI) and report, per rank and step, computation, communication, "
                "their overlap, exposed communication and idle time");
  cmd->add_option("--trace", options->trace_file,
                  "Also write the timeline as a Chrome/Perfetto trace to FILE (implies --timeline)")
      ->check(not_empty("leave --trace out to write no trace"));
  cmd->add_option("--timeline-json", options->timeline_json,
                  "Write the job's timeline (each step's slowest rank, the processes) as JSON to FILE (implies "
                  "--timeline)")
      ->check(not_empty("leave --timeline-json out to write no JSON"));
  cmd->add_option("--step-range", options->step_range,
                  "Steps are the program's NVTX ranges whose name matches this glob, e.g. 'step' or 'ProfilerStep*' "
                  "(implies --timeline; default: the whole run is one step)")
      ->check(not_empty("leave --step-range out to take the whole run as one step"));
  cmd->add_option("command", options->command, "The command and its arguments (after --)")->required();
  cmd->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace tandem::cli
