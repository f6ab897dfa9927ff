#pragma once
// GPU tests skip themselves (reported skipped, never passed) when the machine has too few GPUs.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "tandem/gpu_runtime.h"

namespace tandem_test {

inline int gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

// The `tandem` binary: $TANDEM_CLI when set (the GPU machine runs a copied build tree at another
// path), else the one this build produced.
inline std::string cli_path() {
  const char* from_env = std::getenv("TANDEM_CLI");
  return from_env && *from_env ? from_env : TANDEM_CLI_PATH;
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs a shell command, capturing its output.
inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace tandem_test

#define TANDEM_REQUIRE_GPUS(n)                                                                    \
  do {                                                                                            \
    const int tandem_gpus_ = ::tandem_test::gpu_count();                                          \
    if (tandem_gpus_ < (n)) GTEST_SKIP() << "needs " << (n) << " GPU(s), found " << tandem_gpus_; \
  } while (0)
