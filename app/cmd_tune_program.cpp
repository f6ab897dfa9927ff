// `tandem tune [options] -- CMD ARGS...`: parses the options of tuning a program, checks them before
// any run, calls the program tuner (program_tools/program_tuner.h) and sends what its results say
// (program_tools/program_tune_results.h) where the options ask: progress lines on stderr, the
// results table on stdout, the policy file (best so far after each round, headed UNFINISHED until the
// last) and --json.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <set>

#include "command_line.h"
#include "program_tools/program_tune_results.h"
#include "program_tools/run_logs.h"
#include "report/report.h"
#include "run_environment.h"
#include "tandem/build_info.h"
#include "tandem/error.h"
#include "tandem/printable.h"
#include "tandem/safe_file.h"
#include "tandem/text.h"
#include "tune_policy_file.h"
#include "tune_program_cli.h"

namespace tandem::cli {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxRounds = 100;
constexpr double kMaxTimeoutSeconds = 604800;  // a week, as the benchmark's --timeout
constexpr int kInterruptedStatus = 130;        // 128 + SIGINT, as a shell reports an interrupted command

const char* const kGroup = "Tuning a program (tandem tune [options] -- CMD ARGS...)";

// Options both tunes read; any other option given with a command is the benchmark's.
const std::set<std::string> kProgramOptions = {
    "--out",       "--json",       "--quiet", "--timeout", "--metric", "--metric-higher-is-better",
    "--rounds",    "--candidates", "--logs",  "--help",    "command",  "--objective",
    "--step-range"};

// The candidates: --candidates as given (each must be one `tandem run` applies), else the default
// list less what `tandem run` refuses. Duplicates are measured once.
std::vector<OverlapPolicy> candidates_of(const ProgramTuneCli& cli) {
  std::vector<OverlapPolicy> listed;
  if (cli.candidates.empty()) {
    for (const auto& p : program_tools::program_candidates())
      if (run_can_apply(p)) listed.push_back(p);
  } else {
    listed = checking_input([&] { return parse_policy_list(cli.candidates); });
    for (const auto& p : listed) {
      const std::string why = run_refusal(p);
      TANDEM_CHECK_INPUT(why.empty(), "--candidates: " + why);
    }
  }
  std::vector<OverlapPolicy> out;
  for (const auto& p : listed)
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  return out;
}

// --logs DIR (created if missing; docs/SECURITY.md: a folder others cannot write or plant files in),
// else a fresh private folder (mkdtemp: mode 0700) in $TMPDIR (or /tmp).
std::string logs_folder(const std::string& given) {
  if (given.empty()) return make_temporary_folder("tandem-tune-", "the run logs", "give --logs DIR");
  const std::string absolute = fs::absolute(given).lexically_normal().string();
  make_private_folder(absolute,
                      {"--logs folder", "plant files among the run logs", "choose another folder with --logs", 022});
  return absolute;
}

}  // namespace

void add_program_tune_options(CLI::App* cmd, const std::shared_ptr<ProgramTuneCli>& cli) {
  // All in kGroup; the options added after these keep the group they had.
  const std::string previous_group = cmd->option_defaults()->get_group();
  cmd->option_defaults()->group(kGroup);
  cmd->add_option("--metric", cli->metric,
                  "Regular expression (an ECMAScript subset, docs/RUN.md) with one capture group around a decimal "
                  "number the program prints, e.g. '\"step_ms_median\": ([0-9.]+)'; a run's value is the median of "
                  "its matches in stdout and stderr")
      ->default_str("the wall time of each run")
      ->check(not_empty("leave --metric out to measure wall time"));
  cmd->add_flag("--metric-higher-is-better", cli->higher_is_better,
                "The metric is a throughput: higher wins (default: lower wins)");
  cmd->add_option(
         "--objective", cli->objective,
         "What ranks the candidates: wall (each run's wall time), metric (--metric), step-time or exposed-comm "
         "(the slowest rank's step time or exposed communication from tandem run --timeline, median over the "
         "steps)")
      ->check(CLI::IsMember({"wall", "metric", "step-time", "exposed-comm"}))
      ->default_str("metric with --metric, else wall");
  cmd->add_option("--step-range", cli->step_range,
                  "With --objective step-time or exposed-comm: the steps are the program's NVTX ranges matching this "
                  "glob (default: the whole run is one step)");
  cmd->add_option("--rounds", cli->rounds,
                  "Rounds, from 1 to " + std::to_string(kMaxRounds) +
                      "; each runs the baseline (the program without tandem), then every candidate in an order "
                      "rotated per round")
      ->capture_default_str()
      ->check(decimal_number());
  cmd->add_option("--candidates", cli->candidates, "Policies to try, comma-separated, each one `tandem run` applies")
      ->default_str("priority, shape:1..4 with and without priority, shape:auto+priority, NCCL CTA settings");
  cmd->add_option("--logs", cli->logs, "Folder for each run's output (created if missing)")
      ->default_str("a new private folder under $TMPDIR, printed");
  cmd->add_option("command", cli->command, "The program and its arguments, after --");
  cmd->option_defaults()->group(previous_group);
}

void refuse_benchmark_options(const CLI::App& cmd) {
  for (const CLI::Option* option : cmd.get_options()) {
    if (option->count() == 0) continue;
    const std::string name = option->get_name();
    TANDEM_CHECK_INPUT(kProgramOptions.count(name) > 0,
                       name +
                           " is an option of the benchmark tune; tuning a program (after --) reads only -o/--out, "
                           "--json, -q/--quiet, -T/--timeout, --metric, --metric-higher-is-better, --objective, "
                           "--step-range, --rounds, --candidates and --logs");
  }
}

int run_program_tune(const ProgramTuneCli& cli, const SharedTuneOutputs& shared) {
  // Everything the user gave is checked before the first run: one plain line each.
  program_tools::ProgramTuneOptions o;
  o.command = cli.command;
  o.rounds = cli.rounds;
  o.timeout_s = shared.timeout_s.value_or(0);
  checking_input([&] {
    TANDEM_CHECK_INPUT(
        cli.rounds >= 1 && cli.rounds <= kMaxRounds,
        "--rounds " + std::to_string(cli.rounds) + " is out of bounds: from 1 to " + std::to_string(kMaxRounds));
    if (shared.timeout_s)
      TANDEM_CHECK_INPUT(*shared.timeout_s > 0 && *shared.timeout_s <= kMaxTimeoutSeconds,
                         "--timeout " + number(*shared.timeout_s) + " is out of bounds: above 0, at most 604800");
    if (!cli.metric.empty()) o.metric = program_tools::ProgramMetric(cli.metric, cli.higher_is_better);
    TANDEM_CHECK_INPUT(!cli.higher_is_better || !cli.metric.empty(),
                       "--metric-higher-is-better needs --metric (wall time is always lower-is-better)");
    const auto objective = program_tools::parse_objective(
        cli.objective.empty() ? (cli.metric.empty() ? "wall" : "metric") : cli.objective);
    TANDEM_CHECK_INPUT(objective.has_value(), "--objective " + quoted_value(cli.objective) +
                                                  " is not one of wall, metric, step-time, exposed-comm");
    o.objective = *objective;
    TANDEM_CHECK_INPUT(o.objective != program_tools::ObjectiveKind::Metric || !cli.metric.empty(),
                       "--objective metric needs --metric");
    TANDEM_CHECK_INPUT(cli.metric.empty() || o.objective == program_tools::ObjectiveKind::Metric,
                       "--metric is read only with --objective metric, not " + std::string(to_string(o.objective)));
    TANDEM_CHECK_INPUT(cli.step_range.empty() || program_tools::from_timeline(o.objective),
                       "--step-range is read only with --objective step-time or exposed-comm");
    o.step_range = cli.step_range;
    require_writable_outputs({{"--out", shared.policy_file}, {"--json", shared.json_path}});
    // The candidates run under `tandem run`: its interposer must be there before the first run.
    locate_preload_library();
  });
  o.candidates = candidates_of(cli);
  TANDEM_CHECK_INPUT(!o.candidates.empty(), "no candidate policy that `tandem run` can apply");
  o.logs_dir = checking_input([&] { return logs_folder(cli.logs); });
  // The candidates run as `tandem run --policy P -- CMD`: this very binary, so what is measured is
  // exactly what a user then runs with the policy file.
  o.tandem_run = {"/proc/self/exe", "run"};

  bench::RunInfo info;
  info.tool = "tune-program";
  info.tandem_version = TANDEM_VERSION_STRING;
  info.commit = TANDEM_GIT_COMMIT;
  info.command = command_line();
  info.date = bench::utc_now_iso8601();

  // The '#' header, progress lines and the closing table go through the program tune's reporter; what
  // each says is the program tools' (program_tune_results.h).
  namespace pt = program_tools;
  pt::ProgramTuneConsoleReporter reporter(shared.progress);
  reporter.report_context(pt::tune_context(info, o));
  // A reused --logs folder: an earlier tune's files would be read as this tune's (run_logs.h).
  if (const size_t removed = pt::remove_earlier_run_files(o.logs_dir))
    reporter.report_warning("removed " + std::to_string(removed) + " file" + (removed == 1 ? "" : "s") +
                            " of an earlier tune from --logs " + quoted_value(o.logs_dir));

  const auto write_quietly = [&](const std::string& path, const std::string& text) {
    const std::string why = try_write_file_atomically(path, text);
    if (!why.empty()) reporter.report_warning(why);
  };
  const auto policy_file_text = [&](const pt::ProgramTuneResult& result, const std::vector<pt::PolicyStats>& stats,
                                    const pt::ProgramDecision& decision, bool finished) {
    return tune_policy_file_text(info, pt::policy_file_lines(o, result, stats, decision, finished),
                                 pt::chosen_policy(stats, decision));
  };
  const auto json_text = [&](const pt::ProgramTuneResult& result, const std::vector<pt::PolicyStats>& stats,
                             const pt::ProgramDecision& decision, bool complete) {
    return bench::json_text(pt::program_tune_document(info, shared.policy_file, o, result, stats, decision, complete),
                            2) +
           "\n";
  };

  // After each round but the last: the best so far in the policy file, headed UNFINISHED, and the
  // JSON so far; Ctrl-C later keeps them.
  pt::ProgramTuneSinks sinks;
  sinks.on_round = [&](const pt::ProgramTuneResult& result) {
    if (result.rounds_done == o.rounds) return;
    const auto stats = pt::program_stats(o, result);
    const auto decision = pt::decide_program_policy(stats, o.metric.higher_is_better());
    write_quietly(shared.policy_file, policy_file_text(result, stats, decision, false));
    if (!shared.json_path.empty()) write_quietly(shared.json_path, json_text(result, stats, decision, false));
  };
  const auto started = std::chrono::steady_clock::now();
  sinks.on_run = [&](const pt::ProgramRun& run, const pt::ProgramTuneResult& result) {
    if (!shared.progress) return;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    reporter.report_progress(pt::run_progress_line(o, run, result, elapsed));
  };

  const pt::ProgramTuneResult result = pt::tune_program(o, sinks);
  const auto stats = pt::program_stats(o, result);
  const auto decision = pt::decide_program_policy(stats, o.metric.higher_is_better());
  const bool finished = !result.interrupted;
  pt::ProgramTuneEnd end = pt::tune_end(o, result, stats, decision);
  // The files first, the report after: a file that cannot be written is the last line the user sees,
  // after the results, and no "wrote" line claims it.
  std::exception_ptr write_failure;
  // Atomically: `tandem run --policy @FILE` in another job never reads half a policy. The files of
  // an unfinished search are written as after each round: a failure is only a warning.
  const auto write = [&](const std::string& path, const std::string& text) {
    if (finished)
      write_file_atomically(path, text);
    else
      write_quietly(path, text);
  };
  try {
    if (result.rounds_done > 0) {
      write(shared.policy_file, policy_file_text(result, stats, decision, finished));
      end.policy_file = shared.policy_file;
      end.chosen = to_string(pt::chosen_policy(stats, decision));
    }
    if (!shared.json_path.empty()) write(shared.json_path, json_text(result, stats, decision, finished));
  } catch (...) {
    write_failure = std::current_exception();
  }
  reporter.report_end(end);
  if (write_failure) std::rethrow_exception(write_failure);
  return finished ? 0 : kInterruptedStatus;
}

}  // namespace tandem::cli
