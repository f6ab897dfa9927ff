// `tandem info`: what tandem sees on this machine, and what it accepts. What it prints is
// gpu_info.cpp, in the GPU commands module (gpu_commands.h).
#include "commands.h"
#include "gpu_commands.h"

namespace tandem::cli {

void add_info_command(CLI::App& app, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "info", "Show the visible GPUs, versions, and the accepted workloads, collectives and policies");
  cmd->callback([&exit_code] { exit_code = gpu_commands().info(); });
}

}  // namespace tandem::cli
