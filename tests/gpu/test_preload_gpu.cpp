// `tandem run` on a real GPU: tests/preload_target/preload_target is run with and without the
// interposer, and the two runs must agree on every result while the interposer's statistics show
// that it saw and controlled the launches of every path.
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

// preload_target: $TANDEM_PRELOAD_TARGET, else next to the `tandem` binary (a build tree copied to
// another path keeps bin/ together), else where this build put it.
std::string target_path() {
  if (const char* from_env = std::getenv("TANDEM_PRELOAD_TARGET"); from_env && *from_env) return from_env;
  const fs::path beside = fs::path(tandem_test::cli_path()).parent_path() / "preload_target";
  if (fs::exists(beside)) return beside.string();
  return TANDEM_PRELOAD_TARGET_PATH;
}

struct TargetRun {
  json result;  // preload_target's JSON line
  json stats;   // the interposer's stats file (empty without tandem)
  std::string output;
};

// The last line that is a JSON object: preload_target prints exactly one; the interposer's summary
// lines start with "tandem[".
json last_json_line(const std::string& output) {
  std::istringstream lines(output);
  json found;
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line.front() == '{') found = json::parse(line);
  return found;
}

class ScratchFile {
 public:
  explicit ScratchFile(const std::string& name)
      : path_(fs::temp_directory_path() / ("tandem_preload_gpu_" + std::to_string(getpid()) + "_" + name)) {}
  ~ScratchFile() {
    std::error_code ignored;
    fs::remove(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TargetRun run_target(const std::string& run_options) {
  TargetRun run;
  ScratchFile stats("stats.json");
  const std::string command = run_options.empty() ? target_path()
                                                  : tandem_test::cli_path() + " run " + run_options + " --stats " +
                                                        stats.path().string() + " -- " + target_path();
  const auto r = tandem_test::run_command("NCCL_NVLS_ENABLE=0 " + command);
  run.output = r.output;
  EXPECT_EQ(r.exit_code, 0) << command << "\n" << r.output;
  run.result = last_json_line(r.output);
  EXPECT_TRUE(run.result.is_object() && run.result.value("ok", false)) << r.output;
  if (!run_options.empty()) {
    std::ifstream in(stats.path());
    EXPECT_TRUE(in.good()) << "no stats file written by " << command << "\n" << r.output;
    if (in.good()) run.stats = json::parse(in);
  }
  return run;
}

uint64_t calls(const json& stats, const char* hook) { return stats["calls_by_hook"].value(hook, uint64_t{0}); }

const json* kernel_named(const json& stats, const std::string& fragment) {
  for (const auto& k : stats["kernels"])
    if (k["name"].get<std::string>().find(fragment) != std::string::npos) return &k;
  return nullptr;
}

TEST(preload_gpu, ShapingAndPriorityChangeNoResultAndReachTheirTargets) {
  TANDEM_REQUIRE_GPUS(1);
  const TargetRun plain = run_target("");
  const TargetRun shaped = run_target("--policy shape:2+priority+compute-always");
  ASSERT_FALSE(plain.result.is_null());
  ASSERT_FALSE(shaped.result.is_null());
  ASSERT_FALSE(shaped.stats.is_null());

  // Shaping and priority never change results.
  EXPECT_EQ(plain.result["checksums"], shaped.result["checksums"]);

  // The probe through the runtime: its natural residency without tandem, 2 blocks/SM with shape:2.
  const int natural = plain.result["residency"]["natural"];
  ASSERT_GT(natural, 2) << "the probe must be shapeable for this test to mean anything";
  EXPECT_EQ(plain.result["residency"]["probe_runtime"], natural);
  EXPECT_EQ(shaped.result["residency"]["probe_runtime"], 2) << shaped.output;

  // Cooperative and cluster launches are left alone: same residency as without tandem.
  EXPECT_EQ(shaped.result["residency"]["cooperative"], plain.result["residency"]["cooperative"]);
  EXPECT_EQ(shaped.result["residency"]["cluster"], plain.result["residency"]["cluster"]);

  const json& s = shaped.stats;
  EXPECT_GT(s["compute_shaped"].get<uint64_t>(), 0u) << s.dump(2);
  EXPECT_GT(s["skipped"].value("cooperative", uint64_t{0}), 0u) << s.dump(2);
  if (shaped.result["clusters_supported"].get<bool>())
    EXPECT_GT(s["skipped"].value("cluster", uint64_t{0}), 0u) << s.dump(2);
  if (shaped.result["nccl_ranks"].get<int>() > 1) {
    EXPECT_GT(s["launches"]["nccl"].get<uint64_t>(), 0u) << s.dump(2);
    EXPECT_GT(s["nccl_elevated"].get<uint64_t>(), 0u) << s.dump(2);
  }

  // Every path was seen: the driver entry points, the per-thread-stream twins, graph capture.
  EXPECT_GT(calls(s, "cuGetProcAddress_v2") + calls(s, "cuGetProcAddress"), 0u);
  EXPECT_GT(calls(s, "cuLaunchKernel"), 0u);
  EXPECT_GT(calls(s, "cuLaunchKernelEx"), 0u);
  EXPECT_GT(calls(s, "cuLaunchCooperativeKernel"), 0u);
  EXPECT_GT(calls(s, "cuLaunchKernel_ptsz") + calls(s, "cuLaunchKernelEx_ptsz"), 0u) << s["calls_by_hook"].dump();
  EXPECT_GT(s["launches"]["captured"].get<uint64_t>(), 0u);
  for (const char* kernel : {"fill_runtime", "fill_driver", "fill_driver_ex", "fill_cooperative", "fill_graph",
                             "fill_ptsz_runtime", "fill_ptsz_driver"}) {
    const json* k = kernel_named(s, kernel);
    ASSERT_NE(k, nullptr) << kernel << " not seen by the interposer: " << s["kernels"].dump(2);
    EXPECT_GE((*k)["launches"].get<uint64_t>(), 1u) << kernel;
  }
  const json* graph = kernel_named(s, "fill_graph");
  EXPECT_NE((*graph)["decision"].get<std::string>().find("shaped"), std::string::npos) << graph->dump();
  const json* cooperative = kernel_named(s, "fill_cooperative");
  EXPECT_EQ((*cooperative)["decision"], "skipped: cooperative");
  // Nothing had to be retried unmodified.
  EXPECT_EQ(s["failures"]["shaped_retried_unshaped"], 0) << s.dump(2);
  EXPECT_EQ(s["failures"]["elevated_retried_as_issued"], 0) << s.dump(2);
}

TEST(preload_gpu, PriorityAloneLeavesResidencyAlone) {
  TANDEM_REQUIRE_GPUS(1);
  const TargetRun plain = run_target("");
  const TargetRun priority = run_target("--policy priority");
  EXPECT_EQ(plain.result["checksums"], priority.result["checksums"]);
  EXPECT_EQ(priority.result["residency"]["probe_runtime"], plain.result["residency"]["natural"]);
  EXPECT_EQ(priority.stats["compute_shaped"], 0);
}

TEST(preload_gpu, SmTargetReachesCublasAndCublasLt) {
  TANDEM_REQUIRE_GPUS(1);
  const TargetRun plain = run_target("");
  const TargetRun capped = run_target("--policy sm-target:100+compute-always");
  EXPECT_EQ(plain.result["checksums"], capped.result["checksums"]);
  EXPECT_EQ(plain.result["cublas_sm_count_target"], 0);
  EXPECT_EQ(capped.result["cublas_sm_count_target"], 100);
  EXPECT_EQ(capped.result["cublaslt_sm_count_target"], 100);
  EXPECT_GE(capped.stats["cublas"]["handles_capped"].get<uint64_t>(), 1u);
  EXPECT_GE(capped.stats["cublas"]["lt_descriptors_capped"].get<uint64_t>(), 1u);
}

TEST(preload_gpu, ShapeAutoAndTheTargetedFormChangeNoResult) {
  TANDEM_REQUIRE_GPUS(1);
  const TargetRun plain = run_target("");
  const TargetRun automatic = run_target("--policy shape:auto+priority+compute-always");
  EXPECT_EQ(plain.result["checksums"], automatic.result["checksums"]);
  // The targeted form (the default): the program's eager compute launches with no NCCL kernel
  // outstanding keep their residency; its graph's launches, replayed later, are shaped.
  const TargetRun targeted = run_target("--policy shape:2+priority");
  EXPECT_EQ(plain.result["checksums"], targeted.result["checksums"]);
  EXPECT_EQ(targeted.stats["compute_controls"], "targeted");
  EXPECT_GT(targeted.stats["skipped"].value("no-collective-in-flight", uint64_t{0}), 0u) << targeted.stats.dump(2);
  const json* graph = kernel_named(targeted.stats, "fill_graph");
  ASSERT_NE(graph, nullptr);
  EXPECT_NE((*graph)["decision"].get<std::string>().find("shaped"), std::string::npos) << graph->dump();
  if (targeted.result["nccl_ranks"].get<int>() == 1)
    EXPECT_EQ(targeted.result["residency"]["probe_runtime"], plain.result["residency"]["natural"]);
}

}  // namespace
