#pragma once
// The subcommands that need the GPU libraries — `tandem bench`, `tandem info` and `tandem tune` of the
// benchmark's cases — run from libtandem_gpu_commands.so, which the command loads only when one of
// them runs. `tandem --version`, `--help`, `plan`, `run` and `tune -- CMD` never map cuBLASLt, NCCL
// or the CUDA runtime's kernels: they start in a few MB and work under a tight `ulimit -v` (docs/
// RELIABILITY.md). The options of every subcommand are parsed in the command itself; the module gets
// them parsed, from the same build (the interface version is checked).
#include "bench_cli.h"
#include "tune_cli.h"

namespace tandem::cli {

// Raised whenever GpuCommands or the structs it passes change.
inline constexpr int kGpuCommandsVersion = 1;

struct GpuCommands {
  int version;
  int (*bench)(const BenchCli& cli);
  int (*tune)(const TuneCli& cli);
  int (*info)();
};

// Loads <dir of tandem>/../lib/libtandem_gpu_commands.so (or lib64) once and returns its entry
// points. Throws tandem::UserError, one line, when it cannot be loaded (a GPU library missing, an
// address-space limit too small), naming the file and the loader's reason.
const GpuCommands& gpu_commands();

// In the module: the subcommands themselves (gpu_bench.cpp, gpu_tune.cpp, gpu_info.cpp).
int run_bench(const BenchCli& cli);
int run_benchmark_tune(const TuneCli& cli);
int run_info();

}  // namespace tandem::cli

// The module's one export: its entry points, given the command line as typed (for results).
extern "C" const tandem::cli::GpuCommands* tandem_gpu_commands(const char* command_line);
