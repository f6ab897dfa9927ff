#pragma once
// The options `tandem bench` and `tandem tune` share and their parsing into BenchOptions; the run's
// description and its JSON document, as `tandem tune` takes them (made in bench/).
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness/bench_options.h"
#include "report/report.h"

namespace tandem::cli {

struct BenchCli {
  bench::BenchOptions options;
  std::string policies;
  std::string dtype = "bf16";
  std::string min_bytes, max_bytes, stream_bytes, gemm_shape;
  int check = 1;
  bool quiet = false;
  bool fixed_count = false;
};

// Adds the workload, collective, size, timing and checking options to `cmd`.
void add_bench_options(CLI::App* cmd, const std::shared_ptr<BenchCli>& cli);
// A result file and the flag that named it, e.g. {"--out", "tandem-tuned.policy"}.
using OutputFile = std::pair<std::string, std::string>;
// Resolves and validates (no GPU needed) the parsed options, the launcher's variables, and that the
// result files (--json, --trace and `more_outputs`) can be written. Throws tandem::UserError.
bench::BenchOptions resolve_bench_options(const BenchCli& cli, const std::vector<OutputFile>& more_outputs = {});
// Checks the GPU count and returns the number of ranks to run on: the visible GPUs (or --gpus) in
// the threads mode, the launcher's world size when a launcher started one process per rank.
// Throws tandem::UserError (no GPU visible, too few, a rank with no GPU or nowhere to meet).
int resolve_ranks(const bench::BenchOptions& options);
// Whether this process prints (headers, rows, progress, JSON): only rank 0 does.
bool prints(const bench::BenchOptions& options);
// Versions, GPU and configuration, for headers and JSON, with this command line
// (harness/run_description.h).
bench::RunInfo describe_run(const bench::BenchOptions& options, int nranks, const std::string& tool);
// Writes `doc` to `path` atomically (tandem/safe_file.h), as valid UTF-8; throws on failure.
void write_json(const std::string& path, const nlohmann::json& doc);

}  // namespace tandem::cli
