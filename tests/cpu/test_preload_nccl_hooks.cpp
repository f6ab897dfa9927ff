// The interposer's NCCL hooks end to end without a GPU. tests/preload_target/fake_nccl has a fake
// libnccl.so.2 that records what it receives and a client that creates communicators every way NCCL
// offers, issues each collective and destroys them; it runs without the interposer and under
// several policies. A client of the real NCCL, calling only what needs no GPU, checks that a
// program using NCCL that way sees nothing of the interposer.
#include <gtest/gtest.h>
#include <nccl.h>  // NCCL_VERSION_CODE: the header the fake and the interposer were built with
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "preload/hooked_symbols.h"
#include "test_preload_paths.h"
#include "test_run_contract_shell.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using tandem_run_contract_test::Result;
using tandem_run_contract_test::run_shell;
using tandem_run_contract_test::sh_quoted;

const std::string kLibrary = tandem_preload_test::preload_library_path();

// Beside this test (a copied build tree), else where the build put them.
std::string beside_or(const char* name, const char* built) {
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self/exe", ec);
  const auto beside = self.parent_path() / "fake_nccl" / name;
  if (!ec && fs::exists(beside, ec)) return beside.string();
  return built;
}
const std::string kFakeClient = beside_or("fake_nccl_client", TANDEM_FAKE_NCCL_CLIENT_PATH);
const std::string kVersionClient = beside_or("nccl_version_client", TANDEM_NCCL_VERSION_CLIENT_PATH);

constexpr int kInProgress = 7;       // ncclInProgress
constexpr int kInvalidArgument = 4;  // ncclInvalidArgument
constexpr int kUndefined = INT_MIN;  // NCCL_CONFIG_UNDEF_INT
constexpr int kEfficiency = 1;       // NCCL_CTA_POLICY_EFFICIENCY

struct ClientRun {
  Result raw;
  json out;
  json stats;
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `environment` is VAR=value ...; without `policy` the client runs without the interposer.
ClientRun run_client(const std::string& client, const char* policy, const std::string& environment = "") {
  const fs::path stats = fs::temp_directory_path() / ("tandem_nccl_hooks_" + std::to_string(getpid()) + ".json");
  fs::remove(stats);
  std::string command = "env -u LD_LIBRARY_PATH -u TANDEM_POLICY " + environment;
  if (policy)
    command += " LD_PRELOAD=" + sh_quoted(kLibrary) + " TANDEM_POLICY=" + sh_quoted(policy) +
               " TANDEM_STATS_FILE=" + sh_quoted(stats.string());
  // The root process always reports (exit_report.cpp), so the stats file exists even with no launch.
  command += " sh -c " + sh_quoted("TANDEM_ROOT_PID=$$ exec " + sh_quoted(client));
  ClientRun r;
  r.raw = run_shell(command);
  if (!r.raw.out.empty() && r.raw.out.front() == '{') r.out = json::parse(r.raw.out);
  if (fs::exists(stats)) r.stats = json::parse(read_file(stats));
  fs::remove(stats);
  return r;
}

// The calls of function `fn` the fake received, in order.
json calls_of(const ClientRun& r, const std::string& fn) {
  json found = json::array();
  for (const auto& call : r.out["calls"])
    if (call["fn"] == fn) found.push_back(call);
  return found;
}

json collectives_received(const ClientRun& r) {
  json found = json::array();
  for (const auto& call : r.out["calls"])
    if (call.contains("count")) found.push_back(call);
  return found;
}

constexpr const char* kSettings = "nccl-ctas:..16+nccl-cga:1+nccl-cta-policy:efficiency";

class preload_nccl_hooks : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    plain_ = new ClientRun(run_client(kFakeClient, nullptr));
    settings_ = new ClientRun(run_client(kFakeClient, kSettings));
    // No CUDA device for the route, whatever the machine: the route library loads (it binds to the
    // fake libnccl.so.2) and then declines to make a route.
    copy_engine_ = new ClientRun(run_client(kFakeClient, "copy-engine", "CUDA_VISIBLE_DEVICES= TANDEM_LOG_LEVEL=info"));
  }
  static void TearDownTestSuite() {
    delete plain_;
    delete settings_;
    delete copy_engine_;
  }
  static const ClientRun& plain() { return *plain_; }
  static const ClientRun& settings() { return *settings_; }
  static const ClientRun& copy_engine() { return *copy_engine_; }

 private:
  static inline ClientRun* plain_ = nullptr;
  static inline ClientRun* settings_ = nullptr;
  static inline ClientRun* copy_engine_ = nullptr;
};

TEST_F(preload_nccl_hooks, TheProgramSeesNcclsResultsAndErrnoUnchanged) {
  ASSERT_EQ(plain().raw.status, 0) << plain().raw.err;
  ASSERT_EQ(settings().raw.status, 0) << settings().raw.err;
  ASSERT_EQ(copy_engine().raw.status, 0) << copy_engine().raw.err;
  // Every step's return code and errno, including NCCL's failure with its errno and a collective
  // entered with errno 1234, exactly as without the interposer.
  EXPECT_EQ(settings().out["steps"], plain().out["steps"]) << settings().out["steps"].dump(1);
  EXPECT_EQ(copy_engine().out["steps"], plain().out["steps"]);
  EXPECT_EQ(plain().out["steps"]["all_reduce_failing"]["result"], kInvalidArgument);
  EXPECT_EQ(plain().out["steps"]["all_reduce_failing"]["errno"], 61);
  EXPECT_EQ(plain().out["steps"]["all_reduce_errno_kept"]["errno"], 1234);
  EXPECT_EQ(plain().out["steps"]["init_rank_config"]["result"], kInProgress);
  EXPECT_EQ(plain().out["steps"]["split_nocolor_comm_null"], true);
}

TEST_F(preload_nccl_hooks, CollectivesReachNcclWithTheirArgumentsUntouched) {
  const json expected = collectives_received(plain());
  EXPECT_EQ(expected.size(), 14u);
  EXPECT_EQ(collectives_received(settings()), expected);
  EXPECT_EQ(collectives_received(copy_engine()), expected);
  for (const char* fn : {"ncclCommFinalize", "ncclCommDestroy", "ncclCommAbort"})
    EXPECT_EQ(calls_of(settings(), fn), calls_of(plain(), fn)) << fn;
}

TEST_F(preload_nccl_hooks, WithoutSettingsCreationGoesThroughUnchanged) {
  // copy-engine names no communicator setting: ncclCommInitRank stays ncclCommInitRank and every
  // configuration arrives as the program made it.
  EXPECT_EQ(calls_of(copy_engine(), "ncclCommInitRank").size(), 1u);
  for (const char* fn : {"ncclCommInitRankConfig", "ncclCommSplit", "ncclCommInitRankScalable", "ncclCommInitAll"})
    EXPECT_EQ(calls_of(copy_engine(), fn), calls_of(plain(), fn)) << fn;
}

TEST_F(preload_nccl_hooks, InitRankBecomesInitRankConfigWithTheInitializerAndTheSettings) {
  EXPECT_TRUE(calls_of(settings(), "ncclCommInitRank").empty());
  const json configs = calls_of(settings(), "ncclCommInitRankConfig");
  ASSERT_EQ(configs.size(), 4u) << configs.dump(1);  // InitRank's, then the program's three
  const json& c = configs[0]["config"];
  EXPECT_EQ(configs[0]["nranks"], 2);
  EXPECT_EQ(c["magic"], 0xcafebeefu);
  EXPECT_EQ(c["blocking"], kUndefined);  // as NCCL's own ncclCommInitRank: NCCL_COMM_BLOCKING or blocking
  EXPECT_EQ(c["maxCTAs"], 16);
  EXPECT_EQ(c["minCTAs"], kUndefined);  // "..16" names the maximum only
  EXPECT_EQ(c["cgaClusterSize"], 1);
  EXPECT_EQ(c["CTAPolicy"], kEfficiency);
  EXPECT_EQ(c["netName"], nullptr);
}

TEST_F(preload_nccl_hooks, TheProgramsConfigKeepsWhatThePolicyDoesNotName) {
  const json configs = calls_of(settings(), "ncclCommInitRankConfig");
  ASSERT_EQ(configs.size(), 4u);
  const json& c = configs[1]["config"];
  EXPECT_EQ(c["blocking"], 0);
  EXPECT_EQ(c["netName"], "Socket");
  EXPECT_EQ(c["minCTAs"], 2);
  EXPECT_EQ(c["maxCTAs"], 16);
  EXPECT_EQ(c["cgaClusterSize"], 1);  // the program's 4, overridden by nccl-cga:1
  EXPECT_EQ(c["CTAPolicy"], kEfficiency);
  // NCCL 2.17's smaller struct: extended, version raised so that NCCL reads CTAPolicy.
  const json& older = configs[2]["config"];
  EXPECT_EQ(older["version"], NCCL_VERSION_CODE);
  EXPECT_EQ(older["blocking"], 1);
  EXPECT_EQ(older["cgaClusterSize"], 1);
  EXPECT_EQ(older["CTAPolicy"], kEfficiency);
  // Not made by NCCL_CONFIG_INITIALIZER: handed to NCCL as it is, for NCCL to refuse.
  EXPECT_EQ(configs[3]["config"], calls_of(plain(), "ncclCommInitRankConfig")[2]["config"]);
  EXPECT_EQ(configs[3]["config"]["magic"], 0);
}

TEST_F(preload_nccl_hooks, SplitScalableAndInitAll) {
  const json splits = calls_of(settings(), "ncclCommSplit");
  ASSERT_EQ(splits.size(), 3u);
  EXPECT_EQ(splits[0]["config"], nullptr);  // NCCL copies the (configured) parent's
  EXPECT_EQ(splits[1]["config"]["maxCTAs"], 16);
  EXPECT_EQ(splits[1]["config"]["blocking"], 1);
  const json scalable = calls_of(settings(), "ncclCommInitRankScalable");
  ASSERT_EQ(scalable.size(), 1u);
  EXPECT_EQ(scalable[0]["config"]["cgaClusterSize"], 1);  // the program gave none
  EXPECT_EQ(calls_of(settings(), "ncclCommInitAll"), calls_of(plain(), "ncclCommInitAll"));
  EXPECT_NE(settings().raw.err.find("ncclCommInitAll takes no ncclConfig_t"), std::string::npos) << settings().raw.err;
  EXPECT_NE(settings().raw.err.find("not one NCCL_CONFIG_INITIALIZER made"), std::string::npos);
  EXPECT_EQ(settings().raw.err.find("needs NCCL"), std::string::npos);  // the fake is 2.28: no version warning
}

TEST_F(preload_nccl_hooks, AnInitialisingCommunicatorIsNeverQueried) {
  // NCCL warns when a communicator is used before it is ready; the hooks ask only once it is.
  for (const auto& call : settings().out["calls"]) EXPECT_FALSE(call.contains("refused")) << call.dump();
  EXPECT_EQ(settings().out["steps"]["state_before_ready"], kInProgress);
}

TEST_F(preload_nccl_hooks, CommunicatorsAreCountedWithTheSettingsApplied) {
  const json& c = settings().stats["nccl_communicators"];
  ASSERT_TRUE(c.is_object()) << settings().raw.err;
  // plain, configured, 2.17, garbage, split x2 (nocolor makes none), InitAll x2, scalable.
  EXPECT_EQ(c["created"], 9);
  // garbage (not a config) and InitAll's two are left as they are.
  EXPECT_EQ(c["configured"], 6);
  EXPECT_EQ(c["unconfigured"], 3);
  EXPECT_EQ(c["destroyed"], 9);
  EXPECT_EQ(c["settings"], kSettings);
  EXPECT_NE(settings().raw.err.find("nccl communicators: 9 created, 6 configured (" + std::string(kSettings) +
                                    "), 3 left unconfigured, 9 destroyed"),
            std::string::npos)
      << settings().raw.err;
  EXPECT_EQ(settings().stats["calls_by_hook"]["ncclCommInitRank"], 1);
  EXPECT_EQ(settings().stats["calls_by_hook"]["ncclCommDestroy"], 8);
  EXPECT_EQ(settings().stats["calls_by_hook"]["ncclCommAbort"], 1);
}

TEST_F(preload_nccl_hooks, CollectivesAreCountedWithBytesAndRoutes) {
  const json& c = settings().stats["nccl_collectives"];
  ASSERT_TRUE(c.is_object()) << settings().raw.err;
  // All-reduce bytes: bf16 8x2, fp32 8x4, fp16 7x2, fp32 8x4, fp64 8x8, fp32 999x4, fp32 8x4,
  // bf16 8x2 (unseen), bf16 8x2 (non-blocking), bf16 8x2 (in a group) = 16+32+14+32+64+3996+32+16+16+16.
  EXPECT_EQ(c["ncclAllReduce"]["calls"], 10);
  EXPECT_EQ(c["ncclAllReduce"]["bytes"], 4234);
  EXPECT_EQ(c["ncclAllReduce"]["nccl"]["not-requested"], 10);
  EXPECT_EQ(c["ncclAllReduce"]["copy_engine"], 0);
  EXPECT_EQ(c["ncclReduceScatter"]["bytes"], 4 * 2 * 2);  // 4 bf16 per rank, 2 ranks
  EXPECT_EQ(c["ncclAllGather"]["bytes"], 4 * 2 * 2);
  EXPECT_EQ(c["ncclAlltoAll"]["calls"], 2);
  EXPECT_EQ(c["ncclAlltoAll"]["bytes"], 2 * 4 * 4 * 2);
  EXPECT_NE(settings().raw.err.find("ncclAllReduce: 10 calls, 4234 B; copy-engine 0, nccl 10 (not-requested 10)"),
            std::string::npos)
      << settings().raw.err;
}

TEST_F(preload_nccl_hooks, CopyEnginePolicyCountsEachFallbackReason) {
  const json& c = copy_engine().stats["nccl_collectives"];
  ASSERT_TRUE(c.is_object()) << copy_engine().raw.err;
  // The eligible calls find no route (no CUDA device); the others say what keeps them from it.
  const json all_reduce = {{"route-unavailable", 3},    // bf16, fp32 in place, errno_kept
                           {"count-not-divisible", 2},  // 7 and 999 over 2 ranks
                           {"op-not-sum", 1},
                           {"no-sum-kernel", 1},         // fp64
                           {"unknown-communicator", 1},  // made without the hooks
                           {"non-blocking-communicator", 1},
                           {"inside-group", 1}};
  EXPECT_EQ(c["ncclAllReduce"]["nccl"], all_reduce);
  EXPECT_EQ(c["ncclAllReduce"]["copy_engine"], 0);
  EXPECT_EQ(c["ncclReduceScatter"]["nccl"], json({{"route-unavailable", 1}}));
  EXPECT_EQ(c["ncclAllGather"]["nccl"], json({{"route-unavailable", 1}}));
  EXPECT_EQ(c["ncclAlltoAll"]["nccl"], json({{"in-place-all-to-all", 1}, {"route-unavailable", 1}}));
  EXPECT_EQ(copy_engine().stats["nccl_communicators"]["settings"], "");
  // Said once, with the reason; no route work reached the fake NCCL (no split, no window, no memory).
  const std::string said = "copy-engine route unavailable: no usable CUDA device for the copy-engine route";
  const size_t at = copy_engine().raw.err.find(said);
  EXPECT_NE(at, std::string::npos) << copy_engine().raw.err;
  EXPECT_EQ(copy_engine().raw.err.find(said, at + 1), std::string::npos);
  EXPECT_EQ(calls_of(copy_engine(), "ncclCommSplit"), calls_of(plain(), "ncclCommSplit"));
  for (const char* fn : {"ncclGather", "ncclCommWindowRegister", "ncclMemAlloc"})
    EXPECT_TRUE(calls_of(copy_engine(), fn).empty()) << fn;
  EXPECT_EQ(copy_engine().stats["copy_engine_route"]["pool_bytes"], 0);
}

TEST_F(preload_nccl_hooks, TheRouteLibraryBindsToTheProgramsNcclNeverASecondOne) {
  // Loaded at the first eligible collective, beside the interposer; the loader reused the fake
  // libnccl.so.2 the program had loaded (by SONAME) rather than load the system's NCCL.
  ASSERT_EQ(copy_engine().out["route_objects"].size(), 1u) << copy_engine().raw.err;
  const std::string route = copy_engine().out["route_objects"][0];
  EXPECT_EQ(fs::path(route).parent_path(), fs::path(kLibrary).parent_path());
  const json nccl = copy_engine().out["nccl_objects"];
  ASSERT_EQ(nccl.size(), 1u) << nccl.dump();
  EXPECT_EQ(nccl, plain().out["nccl_objects"]);
  EXPECT_NE(nccl[0].get<std::string>().find("fake_nccl/libnccl.so.2"), std::string::npos) << nccl.dump();
  EXPECT_NE(copy_engine().raw.err.find("copy-engine route loaded from " + route + ", on " + nccl[0].get<std::string>()),
            std::string::npos)
      << copy_engine().raw.err;
  // Without the policy nothing is loaded.
  EXPECT_TRUE(plain().out["route_objects"].empty());
  EXPECT_TRUE(settings().out["route_objects"].empty());
}

TEST(preload_nccl_hooks_versions, ARouteOnAnNcclOlderThan228IsRefusedWithItsVersion) {
  const ClientRun r = run_client(kFakeClient, "copy-engine", "FAKE_NCCL_VERSION=22703");
  ASSERT_EQ(r.raw.status, 0) << r.raw.err;
  EXPECT_NE(r.raw.err.find("copy-engine route unavailable: the copy-engine route needs NCCL 2.28 or later (CTA "
                           "policy zero, symmetric windows); this process's NCCL is 2.27.3"),
            std::string::npos)
      << r.raw.err;
  ASSERT_TRUE(r.stats.is_object());
  EXPECT_EQ(r.stats["nccl_collectives"]["ncclAllGather"]["nccl"], json({{"route-unavailable", 1}}));
}

TEST(preload_nccl_hooks_versions, AnNcclTooOldForASettingIsSaidOnce) {
  // 2.26.0: knows minCTAs, maxCTAs and cgaClusterSize (2.17), not CTAPolicy (2.27).
  const ClientRun r = run_client(kFakeClient, kSettings, "FAKE_NCCL_VERSION=22600");
  ASSERT_EQ(r.raw.status, 0) << r.raw.err;
  const std::string warning = "nccl-cta-policy needs NCCL 2.27 or later; this process's NCCL is 2.26.0: not applied";
  const size_t at = r.raw.err.find(warning);
  EXPECT_NE(at, std::string::npos) << r.raw.err;
  EXPECT_EQ(r.raw.err.find(warning, at + 1), std::string::npos);  // once
  EXPECT_EQ(r.raw.err.find("nccl-ctas needs"), std::string::npos);
  EXPECT_EQ(r.raw.err.find("nccl-cga needs"), std::string::npos);
}

TEST(preload_nccl_hooks_real_nccl, AProgramCallingOnlyVersionQueriesSeesNothing) {
  const ClientRun without = run_client(kVersionClient, nullptr);
  const ClientRun with = run_client(kVersionClient, kSettings, "TANDEM_LOG_LEVEL=warn");
  ASSERT_EQ(without.raw.status, 0) << without.raw.err;
  ASSERT_EQ(with.raw.status, 0) << with.raw.err;
  EXPECT_NE(without.raw.out.find("ncclGetVersion -> 0 version=2"), std::string::npos) << without.raw.out;
  EXPECT_EQ(with.raw.out, without.raw.out);
  EXPECT_EQ(without.raw.err, "");
  // The root process's summary, and no NCCL line in it: no communicator, no collective.
  EXPECT_EQ(with.raw.err.find("nccl communicators"), std::string::npos) << with.raw.err;
  EXPECT_EQ(with.raw.err.find("ncclAllReduce"), std::string::npos) << with.raw.err;
  ASSERT_TRUE(with.stats.is_object()) << with.raw.err;
  for (int i = 0; i < tandem::preload::kHookCount; ++i) {
    const auto hook = static_cast<tandem::preload::Hook>(i);
    if (tandem::preload::is_nccl_hook(hook))
      EXPECT_EQ(with.stats["calls_by_hook"][tandem::preload::name_of(hook)], 0) << tandem::preload::name_of(hook);
  }
  EXPECT_TRUE(with.stats["nccl_collectives"].empty());
  EXPECT_EQ(with.stats["nccl_communicators"]["created"], 0);
}

}  // namespace
