// libtandem_gpu_commands.so's entry (gpu_commands.h): the subcommands that need the GPU libraries.
#include "command_line.h"
#include "gpu_commands.h"

extern "C" __attribute__((visibility("default"))) const tandem::cli::GpuCommands* tandem_gpu_commands(
    const char* command_line) {
  static const tandem::cli::GpuCommands commands = {tandem::cli::kGpuCommandsVersion, &tandem::cli::run_bench,
                                                    &tandem::cli::run_benchmark_tune, &tandem::cli::run_info};
  tandem::cli::set_command_line_text(command_line ? command_line : "");
  return &commands;
}
