#pragma once
// Each subcommand of `tandem` lives in its own file and registers itself on the top-level app.
// A subcommand's callback runs inside CLI::App::parse and sets `exit_code`; errors propagate as
// exceptions to main(), which prints them and exits.
#include <CLI/CLI.hpp>

namespace tandem::cli {

void add_bench_command(CLI::App& app, int& exit_code);
void add_info_command(CLI::App& app, int& exit_code);
void add_plan_command(CLI::App& app, int& exit_code);
void add_run_command(CLI::App& app, int& exit_code);
void add_tune_command(CLI::App& app, int& exit_code);

}  // namespace tandem::cli
