// `tandem`: the single command-line entry. Only this file exits the process.
#include <cstdio>
#include <exception>

#include "command_line.h"
#include "crash_report.h"
#include "commands.h"
#include "tandem/build_info.h"

int main(int argc, char** argv) {
  tandem::cli::install_crash_report();
  CLI::App app{"tandem: GPU computation and NCCL collectives, overlapped"};
  app.set_version_flag("--version", std::string("tandem ") + TANDEM_VERSION_STRING + " (" + TANDEM_GIT_COMMIT + ")");
  app.require_subcommand(1);
  tandem::cli::set_command_line(argc, argv);
  int exit_code = 0;
  tandem::cli::add_bench_command(app, exit_code);
  tandem::cli::add_info_command(app, exit_code);
  tandem::cli::add_plan_command(app, exit_code);
  tandem::cli::add_run_command(app, exit_code);
  tandem::cli::add_tune_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem: error: %s\n", e.what());
    return 1;
  }
  return exit_code;
}
