// `tandem`: the single command-line entry. Only this file exits the process.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "command_line.h"
#include "commands.h"
#include "crash_report.h"
#include "tandem/build_info.h"
#include "tandem/error.h"
#include "tandem/printable.h"

namespace {

// Messages compose echoed values already cut to tandem::kShownChars each; this bounds the whole line
// too, for messages from libraries (CLI11) that echo what they were given.
constexpr size_t kMessageChars = 2000;

// Every error is one line on stderr: printable (no terminal escapes or line breaks from the input),
// bounded, prefixed so scripts and users can tell it from output. `suffix` is kept whole.
void print_error(const std::string& message, const std::string& suffix = "") {
  std::fprintf(stderr, "tandem: error: %s%s\n", tandem::printable(message, kMessageChars).c_str(), suffix.c_str());
}

// What was printed must have reached its destination: `tandem plan > /dev/full` is a failure.
int output_written(int exit_code) {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    print_error(std::string("cannot write the standard output: ") + (errno ? std::strerror(errno) : "a write failed"));
    return 1;
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  tandem::cli::install_crash_report();
  CLI::App app{"tandem: GPU computation and NCCL collectives, overlapped"};
  app.set_version_flag("--version", std::string("tandem ") + TANDEM_VERSION_STRING + " (" + TANDEM_GIT_COMMIT + ")");
  app.require_subcommand(1);
  // CLI11's own errors (unknown option, a value that is not a number) read like tandem's.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "tandem: error: " + tandem::printable(e.what(), kMessageChars) + " (see --help)\n";
  });
  tandem::cli::set_command_line(argc, argv);
  int exit_code = 0;
  tandem::cli::add_bench_command(app, exit_code);
  tandem::cli::add_info_command(app, exit_code);
  tandem::cli::add_plan_command(app, exit_code);
  tandem::cli::add_run_command(app, exit_code);
  tandem::cli::add_tune_command(app, exit_code);
  try {
    // CLI11 would take an unknown word for a missing subcommand ("A subcommand is required").
    const auto named = [&](const CLI::App* sub) { return sub->check_name(argv[1]); };
    if (argc > 1 && argv[1][0] != '-' && app.get_subcommands(named).empty())
      TANDEM_USER_ERROR("unknown subcommand " + tandem::quoted_value(argv[1]) +
                        ": expected bench, info, plan, run or tune (see --help)");
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return output_written(app.exit(e));  // --help and --version print here
  } catch (const tandem::UserError& e) {
    print_error(e.message());  // the user's mistake: the line names it; where tandem noticed is noise
    return 1;
  } catch (const tandem::Error& e) {
    // tandem's own failure: its location (" [file.cpp:line]", what() after the message) is kept
    // even when the message is cut.
    print_error(e.message(), std::string(e.what()).substr(e.message().size()));
    return 1;
  } catch (const std::exception& e) {
    print_error(e.what());
    return 1;
  }
  return output_written(exit_code);
}
