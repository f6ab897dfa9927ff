// The interposer end to end without a GPU: tests/preload_target/fake_cuda/fake_driver_client reaches
// a fake libcuda.so.1 the way the CUDA runtime does (dlopen, dlsym cuGetProcAddress_v2, resolve
// every entry point) and launches through every entry point; the fake driver records what it
// received. Run with and without LD_PRELOAD, under several policies.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "test_preload_paths.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kClient = tandem_preload_test::fake_driver_client_path();
const std::string kLibrary = tandem_preload_test::preload_library_path();

constexpr int kInvalidValue = 1;         // CUDA_ERROR_INVALID_VALUE
constexpr int kInvalidHandle = 400;      // CUDA_ERROR_INVALID_HANDLE
constexpr int kOutOfResources = 701;     // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
constexpr unsigned kShape2Smem = 76928;  // 256 threads x 32 regs padded to 2 blocks/SM on an H200

struct ClientRun {
  int status = -1;
  json out;
  json stats;
  std::string err;
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs the client with `environment` (VAR=value ...) and, unless `preload` is false, the interposer.
ClientRun run_client(const std::string& environment, bool preload = true) {
  const fs::path dir = fs::temp_directory_path() / ("tandem_fake_driver_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path out = dir / "out", err = dir / "err", stats = dir / "stats.json";
  fs::remove(stats);
  // No LD_LIBRARY_PATH: the client must find the fakes next to it, never real CUDA libraries.
  std::string command = "env -u LD_LIBRARY_PATH " + environment;
  if (preload) command += " LD_PRELOAD=" + kLibrary + " TANDEM_STATS_FILE=" + stats.string();
  command += " " + kClient + " >" + out.string() + " 2>" + err.string();
  const int raw = std::system(command.c_str());
  ClientRun r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.err = read_file(err);
  const std::string text = read_file(out);
  if (!text.empty()) r.out = json::parse(text);
  if (fs::exists(stats)) r.stats = json::parse(read_file(stats));
  fs::remove_all(dir);
  return r;
}

const json& only(const json& run, const char* step) {
  const json& launches = run["out"]["steps"][step];
  EXPECT_EQ(launches.size(), 1u) << step << ": " << launches.dump();
  return launches.at(0);
}

json as_json(const ClientRun& r) { return {{"out", r.out}, {"stats", r.stats}}; }

class preload_fake_driver : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    shaped_ = new ClientRun(run_client("TANDEM_POLICY=shape:2+priority+compute-always"));
    plain_ = new ClientRun(run_client("", false));
  }
  static void TearDownTestSuite() {
    delete shaped_;
    delete plain_;
  }
  static const ClientRun& shaped() { return *shaped_; }
  static const ClientRun& plain() { return *plain_; }

 private:
  static inline ClientRun* shaped_ = nullptr;
  static inline ClientRun* plain_ = nullptr;
};

TEST_F(preload_fake_driver, WithoutTheInterposerEveryLaunchArrivesAsIssued) {
  ASSERT_EQ(plain().status, 0) << plain().err;
  const json run = as_json(plain());
  for (const auto& [name, launches] : plain().out["steps"].items()) {
    for (const auto& l : launches) {
      if (name == "nccl_ex_with_attributes") {
        EXPECT_EQ(l["priority"], 0);  // the launch's own attribute, untouched
        continue;
      }
      EXPECT_FALSE(l["has_priority"].get<bool>()) << name;
      if (name == "compute_own_smem")
        EXPECT_EQ(l["smem"], 4096);
      else if (name.rfind("nccl", 0) != 0)  // NCCL's CTAs ask for 16 KiB themselves
        EXPECT_EQ(l["smem"], 0) << name;
    }
  }
  EXPECT_EQ(only(run, "nccl")["entry"], "cuLaunchKernel");
  for (const auto& [name, wrapped] : plain().out["wrapped"].items()) EXPECT_FALSE(wrapped.get<bool>()) << name;
  EXPECT_TRUE(plain().out["direct_symbol_found"].get<bool>());  // the fake driver's own, once global
  EXPECT_EQ(plain().out["blas"]["cublas_sm_target"], 0);
  EXPECT_EQ(plain().err, "");
}

TEST_F(preload_fake_driver, ResolverHandsOutWrappersForHookedSymbolsOnly) {
  ASSERT_EQ(shaped().status, 0) << shaped().err;
  const json& w = shaped().out["wrapped"];
  EXPECT_TRUE(w["cuGetProcAddress_v2"].get<bool>());
  EXPECT_TRUE(w["cuLaunchKernel"].get<bool>());
  EXPECT_TRUE(w["cuLaunchKernel_ptsz"].get<bool>());
  EXPECT_TRUE(w["cuLaunchKernelEx"].get<bool>());
  EXPECT_TRUE(w["cuGetProcAddress"].get<bool>());
  EXPECT_TRUE(w["nested_cuLaunchKernel"].get<bool>());
  EXPECT_FALSE(w["cuFuncGetAttribute"].get<bool>());
  EXPECT_TRUE(shaped().out["direct_symbol_found"].get<bool>());
}

TEST_F(preload_fake_driver, FirstLaunchUnderCaptureUsesRelaxedModeAndRestoresIt) {
  const json run = as_json(shaped());
  const json& captured = only(run, "captured");
  EXPECT_EQ(captured["smem"], kShape2Smem);  // described and its limit raised during the capture
  EXPECT_EQ(captured["returned"], 0);
  EXPECT_TRUE(shaped().out["capture_mode_restored"].get<bool>());
  EXPECT_EQ(shaped().stats["launches"]["captured"], 1);
}

TEST_F(preload_fake_driver, ComputeLaunchesArePaddedOnEveryPath) {
  const json run = as_json(shaped());
  // compute_own_smem asks for 4096 B itself: the least padding for 2 blocks/SM is still 76928 B.
  for (const char* step : {"compute", "compute_own_smem", "compute_ex", "compute_ptsz", "library_kernel", "captured",
                           "compute_via_nested_resolver", "direct_symbol", "compute_before_nccl"}) {
    const json& l = only(run, step);
    EXPECT_EQ(l["smem"], kShape2Smem) << step;
    EXPECT_EQ(l["driver_result"], 0) << step;
    EXPECT_FALSE(l["has_priority"].get<bool>()) << step;
  }
  EXPECT_EQ(only(run, "compute")["entry"], "cuLaunchKernel");
  EXPECT_EQ(only(run, "compute_ex")["entry"], "cuLaunchKernelEx");
  EXPECT_EQ(only(run, "compute_ptsz")["entry"], "cuLaunchKernel_ptsz");
  // The limit was raised on the function (for a CUkernel: its context function) to allow it.
  EXPECT_GE(shaped().out["compute_limit"].get<int>(), static_cast<int>(kShape2Smem));
  EXPECT_GE(shaped().out["library_function_limit"].get<int>(), static_cast<int>(kShape2Smem));
  EXPECT_GE(shaped().out["library_kernel_level_limit"].get<int>(), static_cast<int>(kShape2Smem));
}

TEST_F(preload_fake_driver, ConcurrentLaunchesAreAllSeenAndShaped) {
  EXPECT_EQ(shaped().out["threaded"]["launches"], 4000);
  EXPECT_EQ(shaped().out["threaded"]["padded"], 4000);
  EXPECT_EQ(plain().out["threaded"]["padded"], 0);
}

TEST_F(preload_fake_driver, LaunchesThatCannotTakeShapingAreLeftAlone) {
  const json run = as_json(shaped());
  const json& cluster = only(run, "compute_cluster");
  EXPECT_EQ(cluster["smem"], 0);
  EXPECT_EQ(cluster["cluster"], 4);
  const json& cooperative = only(run, "compute_cooperative");
  EXPECT_EQ(cooperative["smem"], 0);
  EXPECT_EQ(cooperative["entry"], "cuLaunchCooperativeKernel");
  EXPECT_EQ(only(run, "persistent")["smem"], 0);
  const json& unknown = only(run, "unknown_function");
  EXPECT_EQ(unknown["returned"], kInvalidHandle);
}

TEST_F(preload_fake_driver, NcclLaunchesGetTheGreatestPriority) {
  const json run = as_json(shaped());
  const json& nccl = only(run, "nccl");
  EXPECT_EQ(nccl["entry"], "cuLaunchKernelEx");  // cuLaunchKernel re-issued with the attribute
  EXPECT_TRUE(nccl["has_priority"].get<bool>());
  EXPECT_EQ(nccl["priority"], -5);
  EXPECT_EQ(nccl["smem"], 16 * 1024);
  EXPECT_EQ(nccl["attributes"], 1);
  const json& ex = only(run, "nccl_ex_with_attributes");
  EXPECT_EQ(ex["priority"], -5);   // overrides the launch's own priority attribute
  EXPECT_EQ(ex["attributes"], 2);  // ... instead of adding a second one
  EXPECT_EQ(ex["cluster"], 4);     // and keeps the others
  const json& ptsz = only(run, "nccl_ptsz");
  EXPECT_EQ(ptsz["entry"], "cuLaunchKernelEx_ptsz");  // the per-thread stream stays per-thread
  EXPECT_EQ(ptsz["priority"], -5);
  // 31 attributes of its own: more than the interposer copies, so issued unchanged and counted.
  const json& many = only(run, "nccl_ex_many_attributes");
  EXPECT_FALSE(many["has_priority"].get<bool>());
  EXPECT_EQ(many["attributes"], 31);
  EXPECT_EQ(many["entry"], "cuLaunchKernelEx");
  EXPECT_EQ(shaped().stats["nccl_not_elevated"]["too-many-attributes"], 1);
}

TEST_F(preload_fake_driver, LoweredLimitIsRaisedAgain) {
  const json& launches = shaped().out["steps"]["compute_after_limit_lowered"];
  ASSERT_EQ(launches.size(), 2u) << launches.dump();
  EXPECT_EQ(launches[0]["driver_result"], kInvalidValue);
  EXPECT_EQ(launches[1]["driver_result"], 0);
  EXPECT_EQ(launches[1]["smem"], kShape2Smem);
  EXPECT_EQ(launches[1]["returned"], 0);
  EXPECT_EQ(shaped().stats["failures"]["smem_limit_raised_again"], 1);
}

TEST_F(preload_fake_driver, FailedShapedLaunchIsRetriedUnshapedAndNeverShapedAgain) {
  const json& first = shaped().out["steps"]["fragile_first"];
  ASSERT_EQ(first.size(), 2u) << first.dump();
  EXPECT_EQ(first[0]["smem"], kShape2Smem);
  EXPECT_EQ(first[0]["driver_result"], kOutOfResources);
  EXPECT_EQ(first[1]["smem"], 0);
  EXPECT_EQ(first[1]["returned"], 0);  // the program sees the unshaped launch's result
  const json run = as_json(shaped());
  EXPECT_EQ(only(run, "fragile_again")["smem"], 0);
  EXPECT_EQ(shaped().stats["failures"]["shaped_retried_unshaped"], 1);
}

TEST_F(preload_fake_driver, StatisticsCountEveryPathAndReason) {
  const json& s = shaped().stats;
  ASSERT_TRUE(s.is_object()) << shaped().err;
  EXPECT_EQ(s["policy"], "shape:2+priority+compute-always");
  EXPECT_EQ(s["nccl_elevated"], 3);
  EXPECT_EQ(s["launches"]["nccl"], 4);  // nccl, nccl_ex_with_attributes, nccl_ex_many_attributes, nccl_ptsz
  EXPECT_EQ(s["launches"]["captured"], 1);
  // The 9 steps of ComputeLaunchesArePaddedOnEveryPath, compute_after_limit_lowered, 8 threads x 500.
  EXPECT_EQ(s["compute_shaped"], 10 + 4000);
  EXPECT_EQ(s["skipped"]["cluster"], 1);
  EXPECT_EQ(s["skipped"]["cooperative"], 1);
  EXPECT_EQ(s["skipped"]["one-block-per-sm"], 1);
  EXPECT_EQ(s["skipped"]["failed-retry"], 2);
  EXPECT_EQ(s["skipped"]["no-metadata"], 1);
  EXPECT_EQ(s["calls_by_hook"]["cuLaunchKernel_ptsz"], 2 + 2000);
  EXPECT_EQ(s["calls_by_hook"]["cuLaunchCooperativeKernel"], 1);
  EXPECT_EQ(s["calls_by_hook"]["cuLaunchKernelEx"], 4);
  EXPECT_GT(s["calls_by_hook"]["cuGetProcAddress_v2"].get<int>(), 0);
  // The launch total is the sum over the launch entry points.
  uint64_t by_entry = 0;
  for (const char* e : {"cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
                        "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz"})
    by_entry += s["calls_by_hook"][e].get<uint64_t>();
  EXPECT_EQ(s["launches"]["total"], by_entry);
  bool fragile_listed = false;
  for (const auto& k : s["kernels"])
    if (k["name"] == "fragile()") fragile_listed = k["decision"] == "skipped: failed-retry";
  EXPECT_TRUE(fragile_listed) << s["kernels"].dump(2);
  // The client launches its kernels in no particular order of counts: the list is by launches, most first.
  for (size_t i = 1; i < s["kernels"].size(); ++i)
    EXPECT_GE(s["kernels"][i - 1]["launches"].get<uint64_t>(), s["kernels"][i]["launches"].get<uint64_t>())
        << s["kernels"].dump(2);
  // At the default log level, a process that launched prints its summary (and the two warnings).
  EXPECT_NE(shaped().err.find("summary: policy shape:2+priority"), std::string::npos) << shaped().err;
  EXPECT_NE(shaped().err.find("not shaped again"), std::string::npos);
}

TEST(preload_fake_driver_policies, ShapeAutoWaitsForAnNcclFootprintThenLeavesRoom) {
  const ClientRun r = run_client("TANDEM_POLICY=shape:auto+compute-always");
  ASSERT_EQ(r.status, 0) << r.err;
  const json run = as_json(r);
  EXPECT_EQ(only(run, "compute_before_nccl")["smem"], 0);
  // The compute kernel (256 threads, 32 registers) beside the fake NCCL kernel (512 threads, 32
  // registers, 16 KiB): 6 blocks of 8 warps leave the collective's 16 warps room (8 x 6 + 16 = 64);
  // the least padding for 6 is an allocation above 233472 / 7 B, 33408 B, less 1 KiB reserved.
  EXPECT_EQ(only(run, "compute")["smem"], 32384);
  EXPECT_FALSE(only(run, "nccl")["has_priority"].get<bool>());  // no `priority` in this policy
  EXPECT_EQ(r.stats["skipped"]["no-nccl-footprint"], 1);
}

// The targeted form (docs/RUN.md): shape and sm-target act on compute that may run beside an NCCL
// kernel launched on another stream, not yet complete and not ordered before it by a wait.
ClientRun run_stream_order(const std::string& policy) {
  return run_client("FAKE_CLIENT_SCENARIO=stream-order TANDEM_POLICY=" + policy);
}

TEST(preload_fake_driver_policies, TargetedFormShapesOnlyBesideAnOutstandingCollective) {
  const ClientRun r = run_stream_order("shape:2+sm-target:100");
  ASSERT_EQ(r.status, 0) << r.err;
  const json run = as_json(r);
  const auto smem = [&](const char* step) { return only(run, step)["smem"].get<unsigned>(); };
  EXPECT_EQ(smem("before_any_nccl"), 0u);
  EXPECT_EQ(smem("beside_running_nccl"), kShape2Smem);
  EXPECT_EQ(smem("on_the_nccl_stream"), 0u);  // runs after the collective on its own stream
  EXPECT_EQ(smem("after_waiting"), 0u);       // ordered after it by cuStreamWaitEvent
  EXPECT_EQ(smem("side_stream_not_waiting"), kShape2Smem);
  EXPECT_EQ(smem("side_after_unrelated_wait"), kShape2Smem);  // the event was re-recorded elsewhere first
  // Ordered through the compute stream: only by an event it recorded after its own wait.
  EXPECT_EQ(smem("side_after_compute_before_its_wait"), kShape2Smem);
  EXPECT_EQ(smem("side_after_compute_handoff"), 0u);
  EXPECT_EQ(smem("beside_second_nccl"), kShape2Smem);  // a collective issued after the wait
  EXPECT_EQ(smem("per_thread_after_waiting"), 0u);     // the _ptsz wait on stream 0
  EXPECT_EQ(smem("legacy_stream_not_waiting"), kShape2Smem);
  EXPECT_EQ(smem("after_completion"), 0u);
  EXPECT_EQ(smem("captured_with_nothing_running"), kShape2Smem);
  const json& targets = r.out["gemm_targets"];
  EXPECT_EQ(targets["created"], 0);
  EXPECT_EQ(targets["before_any_nccl"], 0);
  EXPECT_EQ(targets["beside_running_nccl"], 100);
  EXPECT_EQ(targets["on_the_nccl_stream"], 0);
  EXPECT_EQ(targets["after_waiting"], 0);
  EXPECT_EQ(targets["after_completion"], 0);
  EXPECT_EQ(r.stats["compute_controls"], "targeted");
  EXPECT_EQ(r.stats["compute_shaped"], 7);
  EXPECT_EQ(r.stats["skipped"]["no-collective-in-flight"], 6);
  EXPECT_EQ(r.stats["cublas"]["gemms_capped_beside_collective"], 1);
  EXPECT_EQ(r.stats["cublas"]["gemms_left_alone"], 4);
  EXPECT_EQ(r.stats["calls_by_hook"]["cuStreamWaitEvent"], 4);
  EXPECT_EQ(r.stats["calls_by_hook"]["cuStreamWaitEvent_ptsz"], 1);
  EXPECT_NE(r.err.find("(targeted: beside an outstanding collective)"), std::string::npos) << r.err;
}

TEST(preload_fake_driver_policies, ComputeAlwaysShapesAndCapsEveryComputeLaunch) {
  const ClientRun r = run_stream_order("shape:2+sm-target:100+compute-always");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const auto& [name, launches] : r.out["steps"].items()) {
    ASSERT_EQ(launches.size(), 1u) << name;
    if (name.rfind("nccl", 0) != 0) EXPECT_EQ(launches[0]["smem"], kShape2Smem) << name;
  }
  for (const auto& [name, target] : r.out["gemm_targets"].items()) EXPECT_EQ(target, 100) << name;
  EXPECT_EQ(r.stats["compute_controls"], "always");
  EXPECT_EQ(r.stats["skipped"].value("no-collective-in-flight", 0), 0);
}

TEST(preload_fake_driver_policies, TheProgramSeesTheSameResultsUnderTheTargetedForm) {
  // The stream-order program without the interposer: every launch and call as issued.
  const ClientRun plain = run_client("FAKE_CLIENT_SCENARIO=stream-order", false);
  const ClientRun targeted = run_stream_order("shape:2+sm-target:100");
  ASSERT_EQ(plain.status, 0) << plain.err;
  ASSERT_EQ(targeted.status, 0) << targeted.err;
  for (const auto& [name, launches] : plain.out["steps"].items()) {
    EXPECT_EQ(launches[0]["smem"], 0) << name;
    EXPECT_EQ(launches[0]["returned"], targeted.out["steps"][name][0]["returned"]) << name;
  }
}

TEST(preload_fake_driver_policies, ExcludedKernelsGetNoControl) {
  const ClientRun r =
      run_client("TANDEM_POLICY=shape:2+priority+compute-always 'TANDEM_EXCLUDE=*fill_compute*,ncclDevKernel_*'");
  ASSERT_EQ(r.status, 0) << r.err;
  const json run = as_json(r);
  EXPECT_EQ(only(run, "compute")["smem"], 0);
  EXPECT_EQ(only(run, "nccl")["entry"], "cuLaunchKernel");
  EXPECT_FALSE(only(run, "nccl")["has_priority"].get<bool>());
  EXPECT_EQ(only(run, "captured")["smem"], kShape2Smem);  // not excluded
  EXPECT_GT(r.stats["skipped"]["excluded"].get<int>(), 0);
  EXPECT_EQ(r.stats["nccl_not_elevated"]["excluded"], 4);
}

TEST(preload_fake_driver_policies, PatternsMatchTheMangledNameToo) {
  // _Z12fill_computePjmj is "fill_compute(unsigned int*, unsigned long, unsigned int)" demangled: a
  // pattern copied from a profiler's mangled listing excludes it as well.
  const ClientRun r = run_client("TANDEM_POLICY=shape:2+compute-always 'TANDEM_EXCLUDE=_Z12fill_compute*'");
  ASSERT_EQ(r.status, 0) << r.err;
  const json run = as_json(r);
  EXPECT_EQ(only(run, "compute")["smem"], 0);
  EXPECT_EQ(only(run, "captured")["smem"], kShape2Smem);
  const ClientRun included = run_client("TANDEM_POLICY=shape:2+compute-always 'TANDEM_INCLUDE=_Z8captured*'");
  ASSERT_EQ(included.status, 0) << included.err;
  EXPECT_EQ(only(as_json(included), "compute")["smem"], 0);
  EXPECT_EQ(only(as_json(included), "captured")["smem"], kShape2Smem);
}

TEST(preload_fake_driver_policies, IncludeSelectsKernels) {
  const ClientRun r = run_client("TANDEM_POLICY=shape:2+compute-always 'TANDEM_INCLUDE=captured*'");
  ASSERT_EQ(r.status, 0) << r.err;
  const json run = as_json(r);
  EXPECT_EQ(only(run, "compute")["smem"], 0);
  EXPECT_EQ(only(run, "captured")["smem"], kShape2Smem);  // demangled name "captured()" matches
}

TEST(preload_fake_driver_policies, ShapeBytesAddsToEachLaunch) {
  const ClientRun r = run_client("TANDEM_POLICY=shape:48KiB+compute-always");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(only(as_json(r), "compute")["smem"], 48 * 1024);
  // The same kernel right after, asking for 4096 B itself: its own decision, not the one cached for
  // the launch before.
  EXPECT_EQ(only(as_json(r), "compute_own_smem")["smem"], 4096 + 48 * 1024);
}

// The elevation's failure paths (launch_controls.cpp), on a driver that refuses what the interposer
// asks for. The client launches its NCCL kernel four times: nccl, nccl_ex_with_attributes (with a
// priority 0 attribute of its own), nccl_ex_many_attributes (31 attributes) and nccl_ptsz.
TEST(preload_fake_driver_elevation, ARefusedElevatedLaunchIsIssuedAsMadeAndNeverElevatedAgain) {
  const ClientRun r = run_client("FAKE_CUDA_REFUSE_PRIORITY=1 TANDEM_POLICY=priority");
  ASSERT_EQ(r.status, 0) << r.err;
  // The first launch: elevated (refused by the driver), then issued again exactly as the program
  // made it, whose result is what the program gets.
  const json& first = r.out["steps"]["nccl"];
  ASSERT_EQ(first.size(), 2u) << first.dump(2);
  EXPECT_TRUE(first[0]["has_priority"].get<bool>());
  EXPECT_EQ(first[0]["priority"], -5);
  EXPECT_EQ(first[0]["driver_result"], 801);  // CUDA_ERROR_NOT_SUPPORTED
  EXPECT_FALSE(first[1]["has_priority"].get<bool>());
  EXPECT_EQ(first[1]["entry"], "cuLaunchKernel");
  EXPECT_EQ(first[1]["smem"], 16 * 1024);
  EXPECT_EQ(first[1]["driver_result"], 0);
  EXPECT_EQ(first[1]["returned"], 0);
  // Never elevated again: one launch each, as issued.
  const json run = as_json(r);
  EXPECT_FALSE(only(run, "nccl_ptsz")["has_priority"].get<bool>());
  EXPECT_EQ(only(run, "nccl_ptsz")["returned"], 0);
  EXPECT_EQ(only(run, "nccl_ex_with_attributes")["priority"], 0);
  EXPECT_EQ(only(run, "nccl_ex_with_attributes")["returned"], 0);
  EXPECT_EQ(r.stats["nccl_elevated"], 0);
  EXPECT_EQ(r.stats["nccl_not_elevated"]["failed-retry"], 4);
  EXPECT_EQ(r.stats["failures"]["elevated_retried_as_issued"], 1);
  EXPECT_NE(r.err.find("not elevated again"), std::string::npos) << r.err;
}

TEST(preload_fake_driver_elevation, WithoutAPriorityRangeNothingIsElevated) {
  const ClientRun r = run_client("FAKE_CUDA_NO_PRIORITY_RANGE=1 TANDEM_POLICY=priority");
  ASSERT_EQ(r.status, 0) << r.err;
  const json run = as_json(r);
  for (const char* step : {"nccl", "nccl_ptsz"}) {
    EXPECT_FALSE(only(run, step)["has_priority"].get<bool>()) << step;
    EXPECT_EQ(only(run, step)["returned"], 0) << step;
  }
  EXPECT_EQ(only(run, "nccl_ex_with_attributes")["priority"], 0);
  EXPECT_EQ(r.stats["nccl_elevated"], 0);
  EXPECT_EQ(r.stats["nccl_not_elevated"]["no-device"], 4);
  EXPECT_EQ(r.stats["failures"]["elevated_retried_as_issued"], 0);
  EXPECT_NE(r.err.find("could not read the stream priority range of device 0"), std::string::npos) << r.err;
}

TEST(preload_fake_driver_policies, SmTargetReachesCublasAndCublasLt) {
  const ClientRun r = run_client("TANDEM_POLICY=sm-target:100+compute-always");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out["blas"]["cublas_sm_target"], 100);
  EXPECT_EQ(r.out["blas"]["cublaslt_sm_target"], 100);
  EXPECT_EQ(r.stats["cublas"]["handles_capped"], 1);
  EXPECT_EQ(r.stats["cublas"]["lt_descriptors_capped"], 1);
  // sm-target alone changes no launch.
  EXPECT_EQ(only(as_json(r), "compute")["smem"], 0);
  EXPECT_EQ(only(as_json(r), "nccl")["entry"], "cuLaunchKernel");
}

TEST(preload_fake_driver_policies, InvalidPolicyRunsWithoutControlsAndSaysSoOnce) {
  const ClientRun r = run_client("TANDEM_POLICY=shape:2+bogus");
  ASSERT_EQ(r.status, 0) << r.err;
  const json run = as_json(r);
  EXPECT_EQ(only(run, "compute")["smem"], 0);
  EXPECT_FALSE(only(run, "nccl")["has_priority"].get<bool>());
  size_t errors = 0;
  for (size_t at = r.err.find("error: TANDEM_POLICY="); at != std::string::npos;
       at = r.err.find("error: TANDEM_POLICY=", at + 1))
    ++errors;
  EXPECT_EQ(errors, 1u) << r.err;
  EXPECT_EQ(r.stats["policy_valid"], false);
  EXPECT_GT(r.stats["launches"]["total"].get<int>(), 0);  // still counted
}

TEST(preload_fake_driver_policies, DebugLogDescribesKernelsAndDecisions) {
  const ClientRun r = run_client("TANDEM_POLICY=shape:2+priority+compute-always TANDEM_LOG_LEVEL=debug");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("kernel fill_compute(unsigned int*, unsigned long, unsigned int): compute, 32 regs"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("device 0: NVIDIA H200 (sm_90), 132 SMs"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("shaped (8 -> 2 blocks/SM, 76928 B)"), std::string::npos) << r.err;
}

}  // namespace
