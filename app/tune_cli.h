#pragma once
// The options of `tandem tune` for the benchmark's cases (cmd_tune.cpp parses them, gpu_tune.cpp
// runs the tune in the GPU commands module).
#include <memory>
#include <string>

#include "bench_cli.h"

namespace tandem::cli {

// --show's upper bound.
inline constexpr int kMaxShow = 1000;

struct TuneCli {
  std::shared_ptr<BenchCli> bench = std::make_shared<BenchCli>();
  std::string policy_file = "tandem-tuned.policy";
  int show = 8;
  std::string resume;  // --resume FILE.json
};

}  // namespace tandem::cli
