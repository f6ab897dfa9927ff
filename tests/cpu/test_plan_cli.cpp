// `tandem plan` end to end: runs the built binary for every catalogue GPU and checks the exit code
// and the lines users and scripts rely on.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tandem/gpu_catalog.h"

namespace tandem {
namespace {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
  std::vector<std::string> lines;
};

CommandResult run_tandem(const std::string& args) {
  CommandResult r;
  const std::string command = std::string("'") + TANDEM_CLI_PATH + "' " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) r.output.append(buffer, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) r.lines.push_back(line);
  return r;
}

bool has_line_starting(const CommandResult& r, const std::string& prefix) {
  for (const auto& line : r.lines)
    if (line.rfind(prefix, 0) == 0) return true;
  return false;
}

TEST(PlanCli, EveryCatalogueGpu) {
  for (const std::string& key : gpu_catalog_keys()) {
    SCOPED_TRACE(key);
    const CommandResult r = run_tandem("plan --gpu " + key + " --kernel threads=256,regs=32,smem=0");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ASSERT_FALSE(r.lines.empty());
    EXPECT_EQ(r.lines.back(), "# OK") << r.output;
    const DeviceLimits& gpu = gpu_limits(key);
    EXPECT_TRUE(has_line_starting(r, "# gpu     " + key + ": " + gpu.name + " (" + gpu.arch + ")")) << r.output;
    EXPECT_TRUE(has_line_starting(r, "# kernel  threads=256,regs=32,smem=0,dsmem=0,cluster=1: natural ")) << r.output;
    EXPECT_TRUE(has_line_starting(r, "# comm    threads=")) << r.output;
    EXPECT_TRUE(has_line_starting(r, "blocks/SM ")) << r.output;
    EXPECT_TRUE(has_line_starting(r, "# shape:auto -> ")) << r.output;
    // One table row per level, down to 1 block/SM.
    EXPECT_TRUE(has_line_starting(r, "        1 ")) << r.output;
  }
}

TEST(PlanCli, H200StreamingKernelRows) {
  const CommandResult r = run_tandem("plan --gpu h200 --kernel threads=256,regs=32");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_line_starting(r,
                                "# kernel  threads=256,regs=32,smem=0,dsmem=0,cluster=1: natural 8 blocks/SM, "
                                "limited by threads"))
      << r.output;
  // Natural level: no padding; 3 blocks: 57472 B; 1 block: 115840 B (see test_occupancy).
  EXPECT_TRUE(has_line_starting(r, "        8          0        0.0       100.0      100.0 threads       no"))
      << r.output;
  EXPECT_TRUE(has_line_starting(r, "        3      57472       56.1        37.5       37.5 shared-memory no"))
      << r.output;
  EXPECT_TRUE(
      has_line_starting(r, "        1     115840      113.1        12.5       12.5 shared-memory no        yes"))
      << r.output;
  // The typical NCCL CTA (96 regs) never fits beside it.
  EXPECT_TRUE(has_line_starting(r, "# shape:auto -> none")) << r.output;
}

TEST(PlanCli, CustomCommMarksTheAutoLevelAndWritesJson) {
  const std::string json_path = testing::TempDir() + "tandem_plan_test.json";
  const CommandResult r = run_tandem(
      "plan --gpu h200 --kernel threads=256,regs=32 --comm threads=64,regs=32,smem=30000 "
      "--json '" +
      json_path + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_line_starting(r, "# shape:auto -> 6 blocks/SM, dsmem 32384 B")) << r.output;
  bool marked = false;
  for (const auto& line : r.lines)
    if (line.rfind("        6 ", 0) == 0) marked = line.find("<- auto") != std::string::npos;
  EXPECT_TRUE(marked) << r.output;

  std::ifstream file(json_path);
  ASSERT_TRUE(file.good()) << json_path;
  const nlohmann::json plan = nlohmann::json::parse(file);
  EXPECT_EQ(plan.at("gpu").at("key"), "h200");
  EXPECT_EQ(plan.at("natural").at("blocks_per_sm"), 8);
  EXPECT_EQ(plan.at("auto").at("blocks_per_sm"), 6);
  EXPECT_EQ(plan.at("auto").at("dynamic_smem"), 32384);
  EXPECT_EQ(plan.at("levels").size(), 8u);
  EXPECT_EQ(plan.at("levels").at(0).at("limiter"), "threads");
  EXPECT_EQ(plan.at("comm").at("static_smem"), 30000);
  std::remove(json_path.c_str());
}

TEST(PlanCli, BadKernelTextFailsWithOneLine) {
  const CommandResult r = run_tandem("plan --gpu h200 --kernel threads=256,regz=32");
  EXPECT_NE(r.exit_code, 0);
  ASSERT_EQ(r.lines.size(), 1u) << r.output;
  EXPECT_EQ(r.lines[0].rfind("tandem: error: ", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("'regz'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("accepted keys"), std::string::npos) << r.output;
}

TEST(PlanCli, UnknownGpuFailsListingKeys) {
  const CommandResult r = run_tandem("plan --gpu h300 --kernel threads=256,regs=32");
  EXPECT_NE(r.exit_code, 0);
  ASSERT_EQ(r.lines.size(), 1u) << r.output;
  EXPECT_NE(r.output.find("a40, a100, h100, h200, mi250x"), std::string::npos) << r.output;
}

TEST(PlanCli, KernelThatCannotRunFails) {
  const CommandResult r = run_tandem("plan --gpu a40 --kernel threads=1024,regs=255");
  EXPECT_NE(r.exit_code, 0);
  ASSERT_EQ(r.lines.size(), 1u) << r.output;
  EXPECT_NE(r.output.find("cannot be resident"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tandem
