// The interposer's NCCL hooks on real NCCL (2 GPUs): tests/preload_target/nccl_program creates two
// ranks with ncclCommInitRank and runs an all-reduce, an all-gather and a reduce-scatter with exact
// expected results. Under `tandem run --policy nccl-ctas:16+nccl-cga:1` the results must stay exact,
// NCCL must report the communicator configuration the policy names (its INFO lines, since nothing
// sets NCCL_MAX_CTAS / NCCL_CGA_CLUSTER_SIZE), and the summary must count communicators and
// collectives.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "gpu_test_util.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// nccl_program: $TANDEM_NCCL_PROGRAM, else beside `tandem` (a copied build tree keeps bin/ together),
// else where this build put it.
std::string program_path() {
  if (const char* from_env = std::getenv("TANDEM_NCCL_PROGRAM"); from_env && *from_env) return from_env;
  const fs::path beside = fs::path(tandem_test::cli_path()).parent_path() / "nccl_program";
  if (fs::exists(beside)) return beside.string();
  return TANDEM_NCCL_PROGRAM_PATH;
}

json last_json_line(const std::string& output) {
  std::istringstream lines(output);
  json found;
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line.front() == '{') found = json::parse(line);
  return found;
}

constexpr const char* kElements = "1048576";  // 4 MiB of fp32 per rank
constexpr const char* kRepeats = "3";
// NVLink multicast off on the test machine (DESIGN.md); INFO lines of NCCL's init and configuration.
constexpr const char* kNcclEnvironment = "NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV";

TEST(preload_nccl_gpu, ProgramAloneIsExact) {
  TANDEM_REQUIRE_GPUS(2);
  const auto r = tandem_test::run_command(std::string("env NCCL_NVLS_ENABLE=0 ") + program_path() + " " + kElements +
                                          " " + kRepeats);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(last_json_line(r.output)["ok"], true) << r.output;
}

TEST(preload_nccl_gpu, SettingsReachTheCommunicatorsAndResultsStayExact) {
  TANDEM_REQUIRE_GPUS(2);
  const fs::path stats = fs::temp_directory_path() / ("tandem_nccl_gpu_" + std::to_string(getpid()) + ".json");
  fs::remove(stats);
  const std::string command = tandem_test::cli_path() + " run --policy nccl-ctas:16+nccl-cga:1 --stats " +
                              stats.string() + " -- env " + kNcclEnvironment + " " + program_path() + " " + kElements +
                              " " + kRepeats;
  const auto r = tandem_test::run_command(command);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json result = last_json_line(r.output);
  EXPECT_EQ(result["ok"], true) << r.output;
  EXPECT_EQ(result["wrong_all_reduce"], 0);
  EXPECT_EQ(result["wrong_all_gather"], 0);
  EXPECT_EQ(result["wrong_reduce_scatter"], 0);

  // NCCL itself says it took the configuration (init.cc, NCCL_CONFIG_DEFAULT: "Comm config ... set
  // to"), once per rank; no NCCL_* variable was involved (`tandem run` sets none).
  EXPECT_NE(r.output.find("Comm config Max CTAs set to 16"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Comm config Min CTAs set to 16"), std::string::npos);
  EXPECT_NE(r.output.find("Comm config CGA cluster size set to 1"), std::string::npos);
  EXPECT_EQ(r.output.find("reset to NCCL_MAX_CTAS"), std::string::npos);

  // The summary: 2 communicators configured, 3 calls of each collective per rank and repeat.
  EXPECT_NE(r.output.find("nccl communicators: 2 created, 2 configured (nccl-ctas:16+nccl-cga:1), 0 left "
                          "unconfigured, 2 destroyed"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("ncclAllReduce: 6 calls, 50331648 B; copy-engine 0 (0 B), nccl 6 (50331648 B: "
                          "not-requested 6 / 50331648 B)"),
            std::string::npos)
      << r.output;
  std::ifstream in(stats);
  ASSERT_TRUE(in) << "no stats file " << stats;
  const json s = json::parse(in);
  fs::remove(stats);
  EXPECT_EQ(s["nccl_communicators"]["configured"], 2);
  // All-reduce of 2 Mi fp32 elements = 8 MiB per call; all-gather: 1 Mi fp32 from each of 2 ranks =
  // 8 MiB of output; reduce-scatter: 1 Mi per rank of 2 = 8 MiB of input. 6 calls each.
  for (const char* name : {"ncclAllReduce", "ncclAllGather", "ncclReduceScatter"}) {
    EXPECT_EQ(s["nccl_collectives"][name]["calls"], 6) << name;
    EXPECT_EQ(s["nccl_collectives"][name]["bytes"], 6 * 8 * 1024 * 1024) << name;
    EXPECT_EQ(s["nccl_collectives"][name]["nccl"]["not-requested"]["calls"], 6) << name;
  }
  EXPECT_GT(s["launches"]["nccl"].get<int>(), 0);  // NCCL's kernels still pass through the launch hooks
}

}  // namespace
