// The command loads the GPU libraries only for the subcommands that use them (app/gpu_commands.h):
// `--version`, `--help`, `plan`, `run` and `tune -- CMD` start without cuBLASLt, NCCL or CUDA
// kernels, in a few MB, and work under a tight address-space limit (`ulimit -v`), where each of them
// failed to start before. The numbers of docs/RELIABILITY.md come from tests/tools/cli_footprint.py.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_preload_paths.h"
#include "test_run_contract_shell.h"

namespace {

using tandem_run_contract_test::Result;
using tandem_run_contract_test::run_shell;
using tandem_run_contract_test::ScratchFolder;
using tandem_run_contract_test::sh_quoted;

const std::string kTandem = tandem_preload_test::tandem_path();
// 64 MiB of address space: a C++ program and its C library fit, cuBLASLt's 540 MB never do.
const std::string kLimit = "ulimit -v 65536; ";

TEST(cli_footprint, TheCommandNamesNoGpuLibrary) {
  const Result r = run_shell("readelf -dW " + sh_quoted(kTandem) + " | grep NEEDED");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* library : {"nccl", "cublas", "cudart", "libcuda"})
    EXPECT_EQ(r.out.find(library), std::string::npos) << r.out;
}

TEST(cli_footprint, SubcommandsWithoutTheGpuStartUnderATightAddressSpaceLimit) {
  ScratchFolder dir;
  const std::vector<std::string> commands = {
      "--version",
      "--help",
      "bench --help",
      "plan --gpu h200 --kernel threads=256,regs=64",
      "run --log-level error -- true",
      "tune -q --logs logs --rounds 1 --candidates priority -- true",
  };
  for (const auto& command : commands) {
    const Result r = run_shell("cd " + sh_quoted(dir.str()) + " && " + kLimit + sh_quoted(kTandem) + " " + command);
    EXPECT_EQ(r.status, 0) << command << ": " << r.err;
  }
}

// An empty environment (no HOME, no TMPDIR: a cron job, a container's entry point): /tmp stands in.
TEST(cli_footprint, SubcommandsNeedNeitherHomeNorTmpdir) {
  ScratchFolder dir;
  for (const std::string command :
       {"run --log-level error -- /bin/true", "tune -q --rounds 1 --candidates priority -- /bin/true",
        "plan --gpu h200 --kernel threads=256,regs=64"}) {
    const Result r =
        run_shell("cd " + sh_quoted(dir.str()) + " && env -i PATH=/usr/bin:/bin " + sh_quoted(kTandem) + " " + command);
    EXPECT_EQ(r.status, 0) << command << ": " << r.err;
  }
}

// A subcommand that needs the GPU libraries where they cannot be loaded: one line naming the module.
TEST(cli_footprint, AGpuSubcommandThatCannotLoadItsLibrariesSaysSo) {
  const Result r = run_shell(kLimit + sh_quoted(kTandem) + " info");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_NE(r.err.find("needs the GPU libraries"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("libtandem_gpu_commands.so"), std::string::npos) << r.err;
}

}  // namespace
