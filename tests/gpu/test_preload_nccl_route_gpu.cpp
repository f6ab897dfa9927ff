// The copy-engine route behind `tandem run --policy copy-engine` on real NCCL (2 GPUs):
// tests/preload_target/nccl_route_program runs two ranks as threads, each calling ncclAllReduce,
// ncclReduceScatter, ncclAllGather and ncclAlltoAll on cudaMalloc buffers in bf16, fp16 and fp32, at
// even and uneven sizes, with exact expected results. Under the policy the results must stay exact
// and every call must take the route (the uneven all-reduce padded). tests/preload_target/nccl_program
// drives both ranks from one thread, each collective inside an NCCL group: such a group stays with
// NCCL (several-devices-group), the route would run one rank's part after the other's.
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

// A program beside `tandem` (a copied build tree keeps bin/ together), else where this build put it.
std::string program(const char* name, const char* built) {
  const fs::path beside = fs::path(tandem_test::cli_path()).parent_path() / name;
  if (fs::exists(beside)) return beside.string();
  return built;
}
const std::string kRouteProgram = program("nccl_route_program", TANDEM_NCCL_ROUTE_PROGRAM_PATH);
const std::string kGroupProgram = program("nccl_program", TANDEM_NCCL_PROGRAM_PATH);

json last_json_line(const std::string& output) {
  std::istringstream lines(output);
  json found;
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line.front() == '{') found = json::parse(line);
  return found;
}

// NVLink multicast off on the test machine (DESIGN.md).
constexpr const char* kNcclEnvironment = "NCCL_NVLS_ENABLE=0";

struct RouteRun {
  tandem_test::CommandResult result;
  json out;
  json stats;
};

RouteRun under_copy_engine(const std::string& program_and_arguments, const std::string& environment = "") {
  const fs::path stats = fs::temp_directory_path() / ("tandem_nccl_route_" + std::to_string(getpid()) + ".json");
  fs::remove(stats);
  RouteRun r;
  r.result = tandem_test::run_command(tandem_test::cli_path() + " run --policy copy-engine --log-level info --stats " +
                                      stats.string() + " -- env " + kNcclEnvironment + " " + environment + " " +
                                      program_and_arguments);
  r.out = last_json_line(r.result.output);
  if (std::ifstream in(stats); in) r.stats = json::parse(in);
  fs::remove(stats);
  return r;
}

TEST(preload_nccl_route_gpu, ProgramAloneIsExact) {
  TANDEM_REQUIRE_GPUS(2);
  const auto r = tandem_test::run_command(std::string("env ") + kNcclEnvironment + " " + kRouteProgram);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(last_json_line(r.output)["ok"], true) << r.output;
}

void expect_routed_and_exact(const RouteRun& r, bool peer_copies) {
  ASSERT_EQ(r.result.exit_code, 0) << r.result.output;
  EXPECT_EQ(r.out["ok"], true) << r.result.output;
  EXPECT_EQ(r.out["wrong"], json::object()) << r.result.output;
  ASSERT_TRUE(r.stats.is_object()) << r.result.output;
  // Per rank and repeat (2 x 2) and type (3): all-reduce 3 even + 1 odd, 2 of each other kind.
  const json& c = r.stats["nccl_collectives"];
  EXPECT_EQ(c["ncclAllReduce"]["calls"], 48);
  EXPECT_EQ(c["ncclAllReduce"]["copy_engine"]["calls"], 48) << c.dump(1);
  EXPECT_EQ(c["ncclAllReduce"]["nccl"], json::object());
  for (const char* name : {"ncclReduceScatter", "ncclAllGather", "ncclAlltoAll"}) {
    EXPECT_EQ(c[name]["calls"], 24) << name;
    EXPECT_EQ(c[name]["copy_engine"]["calls"], 24) << name << " " << c.dump(1);
  }
  EXPECT_EQ(r.stats["copy_engine_reach"]["share_of_bytes"], 1.0);
  // Staged in and out of window memory; a pool per rank, registered once per size, not per call.
  const json& route = r.stats["copy_engine_route"];
  EXPECT_GT(route["staged_bytes"].get<int64_t>(), 0);  // the all-gathers and all-to-alls stage one side
  // With peer copies the all-reduces and reduce-scatters copy with the peer; else nothing does.
  if (peer_copies)
    EXPECT_GT(route["peer_bytes"].get<int64_t>(), 0);
  else
    EXPECT_EQ(route["peer_bytes"].get<int64_t>(), 0);
  EXPECT_GT(route["pool_bytes"].get<int64_t>(), 0);
  EXPECT_GE(route["registrations"].get<int64_t>(), 2);
  EXPECT_LE(route["registrations"].get<int64_t>(), 2 * 6);
  EXPECT_NE(r.result.output.find("copy-engine route loaded from"), std::string::npos) << r.result.output;
  EXPECT_EQ(r.result.output.find("copy-engine route unavailable"), std::string::npos) << r.result.output;
}

// Staged (the default), and with peer copies: the two GPUs reach each other's memory.
TEST(preload_nccl_route_gpu, EveryCallTakesTheRouteAndEveryResultStaysExact) {
  TANDEM_REQUIRE_GPUS(2);
  for (const bool peer_copies : {false, true}) {
    SCOPED_TRACE(peer_copies ? "peer copies" : "staged");
    expect_routed_and_exact(under_copy_engine(kRouteProgram, peer_copies ? "TANDEM_ROUTE_PEER_COPIES=1" : ""),
                            peer_copies);
  }
}

TEST(preload_nccl_route_gpu, AGroupDrivingTwoGpusFromOneThreadStaysWithNccl) {
  TANDEM_REQUIRE_GPUS(2);
  const RouteRun r = under_copy_engine(kGroupProgram + " 65536 2");
  ASSERT_EQ(r.result.exit_code, 0) << r.result.output;
  EXPECT_EQ(r.out["ok"], true) << r.result.output;
  ASSERT_TRUE(r.stats.is_object()) << r.result.output;
  for (const char* name : {"ncclAllReduce", "ncclAllGather", "ncclReduceScatter"}) {
    EXPECT_EQ(r.stats["nccl_collectives"][name]["copy_engine"]["calls"], 0) << name;
    EXPECT_EQ(r.stats["nccl_collectives"][name]["nccl"]["several-devices-group"]["calls"], 4) << name;
  }
}

}  // namespace
