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
#include <vector>

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
const std::string kRouteClient = beside_or("fake_route_client", TANDEM_FAKE_ROUTE_CLIENT_PATH);
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
// `library`: the interposer to preload (the one beside the fake route library, for routed runs).
ClientRun run_client(const std::string& client, const char* policy, const std::string& environment = "",
                     const std::string& library = kLibrary) {
  const fs::path stats = fs::temp_directory_path() / ("tandem_nccl_hooks_" + std::to_string(getpid()) + ".json");
  fs::remove(stats);
  std::string command = "env -u LD_LIBRARY_PATH -u TANDEM_POLICY " + environment;
  if (policy)
    command += " LD_PRELOAD=" + sh_quoted(library) + " TANDEM_POLICY=" + sh_quoted(policy) +
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
  EXPECT_EQ(plain().out["steps"]["recv_failing"]["result"], kInvalidArgument);
  EXPECT_EQ(plain().out["steps"]["recv_failing"]["errno"], 61);
}

TEST_F(preload_nccl_hooks, ReducesSendsAndReceivesAreCountedAndGoToNccl) {
  // Reached NCCL as made (the peer in "root"), under every policy, the route's included.
  const json sends = calls_of(plain(), "ncclSend");
  ASSERT_EQ(sends.size(), 2u);
  EXPECT_EQ(sends[0]["count"], 6);
  EXPECT_EQ(sends[0]["root"], 1);
  EXPECT_EQ(calls_of(plain(), "ncclReduce")[0]["root"], 1);
  for (const ClientRun* run : {&settings(), &copy_engine()})
    for (const char* fn : {"ncclReduce", "ncclSend", "ncclRecv"}) EXPECT_EQ(calls_of(*run, fn), calls_of(plain(), fn));
  // Counted with count x element size, in the group too, the failing receive as well (NCCL got it).
  for (const ClientRun* run : {&settings(), &copy_engine()}) {
    const json& c = run->stats["nccl_not_routed"];
    EXPECT_EQ(c["ncclReduce"], json({{"calls", 1}, {"bytes", 8 * 4}, {"bytes_saturated", false}})) << c.dump();
    EXPECT_EQ(c["ncclSend"], json({{"calls", 2}, {"bytes", 6 * 2 + 4 * 2}, {"bytes_saturated", false}}));
    EXPECT_EQ(c["ncclRecv"], json({{"calls", 2}, {"bytes", 999 * 4 + 4 * 2}, {"bytes_saturated", false}}));
    // Not collectives of the route's kinds: the reach leaves them out.
    EXPECT_FALSE(run->stats["nccl_collectives"].contains("ncclSend"));
    EXPECT_NE(run->raw.err.find("nccl calls no route takes (to NCCL as made): ncclReduce 1 calls (32 B), ncclSend 2 "
                                "calls (20 B), ncclRecv 2 calls (4004 B)"),
              std::string::npos)
        << run->raw.err;
  }
}

TEST_F(preload_nccl_hooks, CollectivesReachNcclWithTheirArgumentsUntouched) {
  const json expected = collectives_received(plain());
  EXPECT_EQ(expected.size(), 19u);  // 14 collectives, a reduce, two sends, two receives
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
  // docs/SECURITY.md: NCCL gets a copy with the settings; the program's own struct is never written (nor the
  // older, smaller one, which a whole ncclConfig_t written over would overrun).
  for (const char* kept :
       {"program_config_kept", "program_config_2_17_kept", "split_config_kept", "shrink_config_kept"})
    EXPECT_EQ(settings().out["steps"][kept], true) << kept;
}

TEST_F(preload_nccl_hooks, SplitScalableAndInitAll) {
  const json splits = calls_of(settings(), "ncclCommSplit");
  ASSERT_EQ(splits.size(), 5u);
  EXPECT_EQ(splits[0]["config"], nullptr);  // NCCL copies the (configured) parent's
  EXPECT_EQ(splits[1]["config"]["maxCTAs"], 16);
  EXPECT_EQ(splits[1]["config"]["blocking"], 1);
  // Splits of unconfigured parents without a configuration of their own reach NCCL as they are.
  EXPECT_EQ(splits[3]["config"], nullptr);
  EXPECT_EQ(splits[4]["config"], nullptr);
  // Shrinks as splits: without a configuration NCCL copies the configured parent's; with one, the
  // settings are written over it, the program's flags and excluded ranks untouched.
  const json shrinks = calls_of(settings(), "ncclCommShrink");
  ASSERT_EQ(shrinks.size(), 2u);
  EXPECT_EQ(shrinks[0]["config"], nullptr);
  EXPECT_EQ(shrinks[1]["config"]["maxCTAs"], 16);
  EXPECT_EQ(shrinks[1]["config"]["blocking"], 1);
  EXPECT_EQ(shrinks[1]["flags"], NCCL_SHRINK_ABORT);
  EXPECT_EQ(shrinks[1]["excluded"], 1);
  EXPECT_EQ(calls_of(copy_engine(), "ncclCommShrink"), calls_of(plain(), "ncclCommShrink"));
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
  // plain, configured, 2.17, garbage, split x2 (nocolor makes none), shrink x2, InitAll x2, scalable, and
  // the splits of InitAll's communicator and of one the hooks never saw.
  EXPECT_EQ(c["created"], 13);
  // garbage (not a config), InitAll's two and the two splits of unconfigured parents are left as they
  // are; the split and the shrink of the configured parent inherit its settings.
  EXPECT_EQ(c["configured"], 8);
  EXPECT_EQ(c["unconfigured"], 5);
  EXPECT_EQ(c["destroyed"], 13);
  EXPECT_EQ(c["settings"], kSettings);
  EXPECT_NE(settings().raw.err.find("nccl communicators: 13 created, 8 configured (" + std::string(kSettings) +
                                    "), 5 left unconfigured, 13 destroyed"),
            std::string::npos)
      << settings().raw.err;
  EXPECT_EQ(settings().stats["calls_by_hook"]["ncclCommInitRank"], 1);
  EXPECT_EQ(settings().stats["calls_by_hook"]["ncclCommSplit"], 5);
  EXPECT_EQ(settings().stats["calls_by_hook"]["ncclCommShrink"], 2);
  EXPECT_EQ(settings().stats["calls_by_hook"]["ncclCommDestroy"], 12);
  EXPECT_EQ(settings().stats["calls_by_hook"]["ncclCommAbort"], 1);
}

TEST_F(preload_nccl_hooks, CollectivesAreCountedWithBytesAndRoutes) {
  const json& c = settings().stats["nccl_collectives"];
  ASSERT_TRUE(c.is_object()) << settings().raw.err;
  // All-reduce bytes: bf16 8x2, fp32 8x4, fp16 7x2, fp32 8x4, fp64 8x8, fp32 999x4, fp32 8x4,
  // bf16 8x2 (unseen), bf16 8x2 (non-blocking), bf16 8x2 (in a group) = 16+32+14+32+64+3996+32+16+16+16.
  EXPECT_EQ(c["ncclAllReduce"]["calls"], 10);
  EXPECT_EQ(c["ncclAllReduce"]["bytes"], 4234);
  EXPECT_EQ(c["ncclAllReduce"]["nccl"]["not-requested"], json({{"calls", 10}, {"bytes", 4234}}));
  EXPECT_EQ(c["ncclAllReduce"]["copy_engine"], json({{"calls", 0}, {"bytes", 0}}));
  EXPECT_EQ(c["ncclReduceScatter"]["bytes"], 4 * 2 * 2);  // 4 bf16 per rank, 2 ranks
  EXPECT_EQ(c["ncclAllGather"]["bytes"], 4 * 2 * 2);
  EXPECT_EQ(c["ncclAlltoAll"]["calls"], 2);
  EXPECT_EQ(c["ncclAlltoAll"]["bytes"], 2 * 4 * 4 * 2);
  EXPECT_NE(settings().raw.err.find("ncclAllReduce: 10 calls, 4234 B; copy-engine 0 (0 B), nccl 10 (4234 B: "
                                    "not-requested 10 / 4234 B)"),
            std::string::npos)
      << settings().raw.err;
  // No reach line where the policy does not ask for the route.
  EXPECT_EQ(settings().raw.err.find("copy-engine reach"), std::string::npos);
  EXPECT_EQ(settings().stats["copy_engine_reach"]["requested"], false);
}

TEST_F(preload_nccl_hooks, CopyEnginePolicyCountsEachFallbackReason) {
  const json& c = copy_engine().stats["nccl_collectives"];
  ASSERT_TRUE(c.is_object()) << copy_engine().raw.err;
  // The eligible calls find no route (no CUDA device); the others say what keeps them from it.
  const auto calls = [](const json& routes) {
    json out = json::object();
    for (const auto& [route, count] : routes.items()) out[route] = count["calls"];
    return out;
  };
  const json all_reduce = {{"route-unavailable", 7},      // bf16, fp32 in place, 7 and 999 elements, errno_kept,
                                                          // non-blocking, in a group
                           {"op-not-supported", 1},       // max
                           {"no-sum-kernel", 1},          // fp64
                           {"unknown-communicator", 1}};  // made without the hooks
  EXPECT_EQ(calls(c["ncclAllReduce"]["nccl"]), all_reduce);
  EXPECT_EQ(c["ncclAllReduce"]["copy_engine"]["calls"], 0);
  EXPECT_EQ(calls(c["ncclReduceScatter"]["nccl"]), json({{"route-unavailable", 1}}));
  EXPECT_EQ(calls(c["ncclAllGather"]["nccl"]), json({{"route-unavailable", 1}}));
  EXPECT_EQ(calls(c["ncclAlltoAll"]["nccl"]), json({{"in-place-all-to-all", 1}, {"route-unavailable", 1}}));
  EXPECT_EQ(copy_engine().stats["nccl_communicators"]["settings"], "");
  EXPECT_EQ(copy_engine().stats["copy_engine_reach"]["bytes"], 0);
  EXPECT_EQ(copy_engine().stats["copy_engine_reach"]["requested"], true);
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

// ---- the routing paths, with a fake route library ----------------------------------------------
//
// tests/preload_target/fake_nccl/fake_route_client.cpp under `copy-engine`, with the interposer
// beside a fake route library that records each run into the fake NCCL's log: one sequence of what
// NCCL received and what the route ran. Constants are nccl.h's and tandem's enum values.

constexpr int kBf16 = 9, kFp16 = 6, kFp32 = 7, kInt64 = 4, kUint8 = 1;
constexpr int kAllReduce = 0, kReduceScatter = 1, kAllGather = 2, kAllToAll = 3, kBroadcast = 4;
constexpr int kSum = 0, kAverage = 1, kPreMulSum = 2;
constexpr int kInternalError = 3;  // ncclInternalError
constexpr int kSystemError = 2;    // ncclSystemError

class preload_nccl_routing : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    routed_ =
        new ClientRun(run_client(kRouteClient, "copy-engine", "TANDEM_LOG_LEVEL=info",
                                 beside_or("../fake_route/libtandem_preload.so", TANDEM_FAKE_ROUTE_PRELOAD_PATH)));
    unrouted_ = new ClientRun(run_client(kRouteClient, nullptr));
  }
  static void TearDownTestSuite() {
    delete routed_;
    delete unrouted_;
  }
  static const ClientRun& routed() { return *routed_; }
  static const ClientRun& unrouted() { return *unrouted_; }

  // The log from mark `from` to the next mark, marks left out.
  static json section(const ClientRun& r, const std::string& from) {
    json out = json::array();
    bool in = false;
    for (const auto& call : r.out["calls"]) {
      if (call["fn"] == "mark") {
        if (in) break;
        in = call["step"] == from;
        continue;
      }
      if (in) out.push_back(call);
    }
    return out;
  }
  static std::vector<std::string> functions(const json& calls) {
    std::vector<std::string> out;
    for (const auto& c : calls) out.push_back(c["fn"]);
    return out;
  }

 private:
  static inline ClientRun* routed_ = nullptr;
  static inline ClientRun* unrouted_ = nullptr;
};

using Functions = std::vector<std::string>;

TEST_F(preload_nccl_routing, TheProgramSeesNcclsResultsExceptWhereTheRouteFailed) {
  ASSERT_EQ(routed().raw.status, 0) << routed().raw.err;
  ASSERT_EQ(unrouted().raw.status, 0) << unrouted().raw.err;
  json expected = unrouted().out["steps"];
  expected["device_scalar_address"] = routed().out["steps"]["device_scalar_address"];  // a stack address
  // What the route changes: a routed call that fails partway, alone or in a group, is NCCL's internal
  // error; the program's errno stays as it was (NCCL was not called for it).
  expected["failing"] = {{"result", kInternalError}, {"errno", 1234}};
  expected["group_failing_end"]["result"] = kInternalError;
  // A call held for the route and handed back to NCCL at the end of its group (several devices):
  // NCCL's refusal reaches the program at ncclGroupEnd rather than at the call.
  expected["group_refused_first"] = {{"result", 0}, {"errno", 0}};
  expected["group_refused_end"] = {{"result", kInvalidArgument}, {"errno", 0}};
  EXPECT_EQ(routed().out["steps"], expected) << routed().out["steps"].dump(1);
  // Without the interposer: at the call, with NCCL's errno.
  EXPECT_EQ(unrouted().out["steps"]["group_refused_first"], json({{"result", kInvalidArgument}, {"errno", 61}}));
  // NCCL's own failure at the group's end is the program's, errno included, route or not.
  EXPECT_EQ(unrouted().out["steps"]["group_nccl_fails_end"], json({{"result", kSystemError}, {"errno", 61}}));
}

TEST_F(preload_nccl_routing, SumsAveragesAndUnevenCountsRunOnTheRoute) {
  const json sum = section(routed(), "sum");
  ASSERT_EQ(functions(sum), (Functions{"route.create", "route.run"})) << sum.dump(1);
  EXPECT_EQ(sum[0]["rank"], 1);
  EXPECT_EQ(sum[1]["kind"], kAllReduce);
  EXPECT_EQ(sum[1]["count"], 8);
  EXPECT_EQ(sum[1]["dtype"], kBf16);
  EXPECT_EQ(sum[1]["reduction"], kSum);
  EXPECT_EQ(sum[1]["stream"], 1);
  // 7 fp16 over 3 ranks: the route pads; NCCL's average is the route's too.
  const json avg = section(routed(), "avg_uneven");
  ASSERT_EQ(functions(avg), (Functions{"route.create", "route.run"})) << avg.dump(1);
  EXPECT_EQ(avg[1]["count"], 7);
  EXPECT_EQ(avg[1]["dtype"], kFp16);
  EXPECT_EQ(avg[1]["reduction"], kAverage);
  const json rs = section(routed(), "reduce_scatter_avg");
  ASSERT_EQ(functions(rs), (Functions{"route.run"})) << rs.dump(1);
  EXPECT_EQ(rs[0]["kind"], kReduceScatter);
  EXPECT_EQ(rs[0]["reduction"], kAverage);
  EXPECT_EQ(rs[0]["route"], avg[0]["route"]);  // the 3-rank communicator's route, made once
}

TEST_F(preload_nccl_routing, PreMultipliedSumsCarryTheirScalarToTheRoute) {
  const json host = section(routed(), "premul_host");
  ASSERT_EQ(functions(host), (Functions{"ncclRedOpCreatePreMulSum", "route.run"})) << host.dump(1);
  EXPECT_EQ(host[1]["reduction"], kPreMulSum);
  EXPECT_EQ(host[1]["scalar"], 0.5);  // read when the op was made, as NCCL reads a host scalar
  EXPECT_FALSE(host[1].contains("device_scalar"));
  const json device = section(routed(), "premul_device");
  ASSERT_EQ(functions(device), (Functions{"ncclRedOpCreatePreMulSum", "route.run"})) << device.dump(1);
  EXPECT_EQ(device[1]["kind"], kReduceScatter);
  EXPECT_EQ(device[1]["reduction"], kPreMulSum);
  EXPECT_EQ(device[1]["device_scalar"], routed().out["steps"]["device_scalar_address"]);
  // Destroyed: the same op value is no longer one the interposer knows; NCCL gets the call.
  const json destroyed = section(routed(), "premul_destroyed");
  ASSERT_EQ(functions(destroyed), (Functions{"ncclRedOpDestroy", "ncclAllReduce"})) << destroyed.dump(1);
}

TEST_F(preload_nccl_routing, GathersAllToAllAndBroadcastsMoveAnyType) {
  const json moves = section(routed(), "moves");
  ASSERT_EQ(functions(moves), (Functions{"route.run", "route.run", "route.run", "route.run"})) << moves.dump(1);
  EXPECT_EQ(moves[0]["kind"], kAllGather);
  EXPECT_EQ(moves[0]["dtype"], kInt64);
  EXPECT_EQ(moves[1]["kind"], kAllToAll);
  EXPECT_EQ(moves[1]["dtype"], kUint8);
  // ncclBroadcast and ncclBcast (NCCL's in-place form), each with its root.
  EXPECT_EQ(moves[2]["kind"], kBroadcast);
  EXPECT_EQ(moves[2]["root"], 1);
  EXPECT_EQ(moves[3]["kind"], kBroadcast);
  EXPECT_EQ(moves[3]["root"], 0);
}

TEST_F(preload_nccl_routing, WhatTheRouteCannotTakeReachesNcclUntouched) {
  const json keeps = section(routed(), "nccl_keeps");
  ASSERT_EQ(functions(keeps),
            (Functions{"ncclAllReduce", "ncclAllReduce", "ncclAllReduce", "ncclBroadcast", "ncclAllReduce"}))
      << keeps.dump(1);
  EXPECT_EQ(keeps[3]["root"], 2) << "a root the communicator does not have: NCCL's to report";
  EXPECT_EQ(keeps, section(unrouted(), "nccl_keeps"));
}

TEST_F(preload_nccl_routing, AGroupsRoutedCallsRunAfterNcclsGroupEnd) {
  // Nothing of the group runs before its end; then NCCL's (empty) group, then the route's.
  EXPECT_EQ(functions(section(routed(), "group_of_one")), (Functions{"ncclGroupStart"}));
  const json end = section(routed(), "group_of_one_before_end");
  ASSERT_EQ(functions(end), (Functions{"ncclGroupEnd", "route.run_group"})) << end.dump(1);
  ASSERT_EQ(end[1]["calls"].size(), 1u);
  EXPECT_EQ(end[1]["calls"][0]["count"], 8);
  // A call NCCL keeps stays in NCCL's group; the routed ones run after it, in the program's order.
  const json mixed = section(routed(), "group_mixed");
  ASSERT_EQ(functions(mixed), (Functions{"ncclGroupStart", "ncclAllReduce", "ncclGroupEnd", "route.run_group"}))
      << mixed.dump(1);
  EXPECT_EQ(mixed[1]["op"], 2);  // ncclMax
  ASSERT_EQ(mixed[3]["calls"].size(), 3u);
  EXPECT_EQ(mixed[3]["calls"][0]["kind"], kAllReduce);
  EXPECT_EQ(mixed[3]["calls"][1]["kind"], kAllGather);
  EXPECT_EQ(mixed[3]["calls"][2]["kind"], kBroadcast);
  EXPECT_EQ(mixed[3]["calls"][2]["root"], 1);
}

TEST_F(preload_nccl_routing, AGroupWhoseNcclPartIsNonBlockingGoesToNcclWhole) {
  // NCCL issues the group's part, a send on a non-blocking communicator, after ncclGroupEnd returned
  // "in progress": the routed all-reduce would have to wait for it inside ncclGroupEnd. NCCL gets the
  // whole group before its end, as without the interposer, and the interposer polls nothing.
  const json part = section(routed(), "group_nccl_part_in_progress");
  ASSERT_EQ(functions(part), (Functions{"ncclGroupStart", "ncclSend", "ncclAllReduce", "ncclGroupEnd"}))
      << part.dump(1);
  EXPECT_EQ(part, section(unrouted(), "group_nccl_part_in_progress"));
  EXPECT_EQ(routed().out["steps"]["group_in_progress_end"]["result"], kInProgress);
  // The program's own polls see NCCL's progress: "in progress" twice, then done.
  EXPECT_EQ(routed().out["steps"]["group_in_progress_polls_in_progress"], 2);
  EXPECT_EQ(section(routed(), "group_in_progress_polled"), section(unrouted(), "group_in_progress_polled"));
}

TEST_F(preload_nccl_routing, ACommunicatorDestroyedInsideItsGroupRunsNothing) {
  // Its route goes with it; NCCL's group end is the program's, and no route group runs on it.
  const json destroyed = section(routed(), "group_destroyed");
  EXPECT_EQ(functions(destroyed),
            (Functions{"ncclGroupStart", "route.create", "route.destroy", "ncclCommDestroy", "ncclGroupEnd"}))
      << destroyed.dump(1);
  // Aborted by another thread: the group's call on a live communicator still runs, alone.
  const json aborted = section(routed(), "group_aborted_elsewhere");
  ASSERT_EQ(functions(aborted), (Functions{"ncclGroupStart", "route.create", "route.destroy", "ncclCommAbort",
                                           "ncclGroupEnd", "route.run_group"}))
      << aborted.dump(1);
  ASSERT_EQ(aborted[5]["calls"].size(), 1u);
  EXPECT_EQ(aborted[5]["calls"][0]["count"], 6);
  // Beside a rank on another device: nothing is handed to NCCL on the dead communicator; what is left
  // is one device's, and runs on the route.
  const json devices = section(routed(), "group_destroyed_several_devices");
  ASSERT_EQ(functions(devices), (Functions{"ncclGroupStart", "route.create", "route.destroy", "ncclCommDestroy",
                                           "ncclGroupEnd", "route.run_group"}))
      << devices.dump(1);
  ASSERT_EQ(devices[5]["calls"].size(), 1u);
  EXPECT_EQ(devices[5]["calls"][0]["count"], 10);
}

TEST_F(preload_nccl_routing, NestedGroupsRunAtTheOutermostEnd) {
  EXPECT_EQ(functions(section(routed(), "group_nested")),
            (Functions{"ncclGroupStart", "ncclGroupStart", "ncclGroupEnd"}));
  const json outer = section(routed(), "group_nested_after_inner_end");
  ASSERT_EQ(functions(outer), (Functions{"ncclGroupEnd", "route.run_group"})) << outer.dump(1);
  ASSERT_EQ(outer[1]["calls"].size(), 2u);
  EXPECT_EQ(outer[1]["calls"][0]["kind"], kAllReduce);
  EXPECT_EQ(outer[1]["calls"][0]["stream"], 1);
  EXPECT_EQ(outer[1]["calls"][1]["kind"], kReduceScatter);
  EXPECT_EQ(outer[1]["calls"][1]["stream"], 2);
}

TEST_F(preload_nccl_routing, OneGroupOverTwoCommunicatorsIsOneRouteGroup) {
  const json two = section(routed(), "group_two_communicators");
  ASSERT_EQ(functions(two), (Functions{"ncclGroupStart", "ncclGroupEnd", "route.run_group"})) << two.dump(1);
  ASSERT_EQ(two[2]["calls"].size(), 2u);
  EXPECT_NE(two[2]["calls"][0]["route"], two[2]["calls"][1]["route"]);
  EXPECT_EQ(two[2]["calls"][0]["count"], 9);  // 9 fp32 over 3 ranks
}

TEST_F(preload_nccl_routing, AThreadDrivingSeveralDevicesKeepsItsGroupInNccl) {
  // The route would run rank 0's collective before rank 1's, each waiting for the other: the held
  // calls go into NCCL's group, as the program issued them, before its end.
  const json group = section(routed(), "group_several_devices");
  ASSERT_EQ(functions(group), (Functions{"ncclGroupStart", "route.create", "ncclAllReduce", "ncclAllReduce",
                                         "ncclBroadcast", "ncclGroupEnd"}))
      << group.dump(1);
  EXPECT_EQ(group[2]["op"], 4);  // ncclAvg, as the program gave it
  EXPECT_EQ(group[3]["count"], 8);
  // ncclBcast's call, as ncclBroadcast in place with its root.
  EXPECT_EQ(group[4]["root"], 1);
  EXPECT_EQ(group[4]["in_place"], true);
  EXPECT_EQ(group[4]["count"], 5);
}

TEST_F(preload_nccl_routing, FirstCollectivesOnTwoDevicesInOneGroupStayInNccl) {
  // Neither communicator had a collective before: their devices are asked at this first call, and
  // differ, so the group is NCCL's (the route would wait on rank 0 for rank 1, never issued).
  const json group = section(routed(), "group_first_use_several_devices");
  ASSERT_EQ(functions(group), (Functions{"ncclGroupStart", "route.create", "route.create", "ncclAllReduce",
                                         "ncclAllReduce", "ncclGroupEnd"}))
      << group.dump(1);
  EXPECT_EQ(group[1]["rank"], 0);
  EXPECT_EQ(group[2]["rank"], 1);
}

TEST_F(preload_nccl_routing, ANewAndAUsedCommunicatorOnOneDeviceAreOneRouteGroup) {
  const json group = section(routed(), "group_new_and_used_one_device");
  ASSERT_EQ(functions(group), (Functions{"ncclGroupStart", "route.create", "ncclGroupEnd", "route.run_group"}))
      << group.dump(1);
  ASSERT_EQ(group[3]["calls"].size(), 2u);
  EXPECT_EQ(group[3]["calls"][0]["kind"], kAllReduce);
  EXPECT_EQ(group[3]["calls"][1]["kind"], kAllGather);
}

TEST_F(preload_nccl_routing, NonBlockingCommunicatorsTakeTheRoute) {
  const json nb = section(routed(), "non_blocking");
  ASSERT_EQ(functions(nb), (Functions{"route.create", "route.run"})) << nb.dump(1);
  EXPECT_EQ(nb[0]["rank"], 0);
}

TEST_F(preload_nccl_routing, AFailedRouteReportsAnErrorAndLeavesLaterCallsToNccl) {
  const json group = section(routed(), "group_failing");
  EXPECT_EQ(functions(group), (Functions{"ncclGroupStart", "ncclGroupEnd", "route.run_group"})) << group.dump(1);
  const json failing = section(routed(), "failing");
  ASSERT_EQ(functions(failing), (Functions{"route.run", "ncclAllReduce"})) << failing.dump(1);
  EXPECT_EQ(failing[1]["count"], 9);  // after_failure: NCCL's
  EXPECT_NE(routed().raw.err.find("copy-engine ncclAllReduce failed: the fake route fails on 777 elements; "
                                  "returning ncclInternalError to the program"),
            std::string::npos)
      << routed().raw.err;
  // Destroyed healthy where the route never failed, aborted where it did.
  const json teardown = section(routed(), "teardown");
  ASSERT_EQ(functions(teardown), (Functions{"route.destroy", "ncclCommDestroy", "route.destroy", "ncclCommDestroy",
                                            "route.destroy", "ncclCommAbort", "route.destroy", "ncclCommDestroy"}))
      << teardown.dump(1);
  EXPECT_EQ(teardown[0]["healthy"], true);
  EXPECT_EQ(teardown[2]["healthy"], false);
  EXPECT_EQ(teardown[4]["healthy"], false);
}

TEST_F(preload_nccl_routing, WhenNcclsGroupFailsTheRoutedCallsAreNotRunAndRoutingGoesOn) {
  // The group's routed call is dropped: NCCL's group end, and no route.run_group after it.
  EXPECT_EQ(functions(section(routed(), "group_nccl_fails")), (Functions{"ncclGroupStart", "ncclGroupEnd"}));
  EXPECT_NE(routed().raw.err.find("ncclGroupEnd failed (2): the group's 1 routed collectives were not run"),
            std::string::npos)
      << routed().raw.err;
  // The communicator's route did not fail: the next call, after the group, takes it (outside any group).
  const json after = section(routed(), "after_failed_group");
  ASSERT_EQ(functions(after), (Functions{"route.run"})) << after.dump(1);
  EXPECT_EQ(after[0]["kind"], kAllGather);
  EXPECT_EQ(after[0]["count"], 4);
}

TEST_F(preload_nccl_routing, AHeldCallNcclRefusesAtTheGroupsEndIsReportedThere) {
  // Over several devices the held calls go into NCCL's group as the program issued them, before its end.
  const json group = section(routed(), "group_several_devices_refused");
  ASSERT_EQ(functions(group), (Functions{"ncclGroupStart", "ncclAllReduce", "ncclAllReduce", "ncclGroupEnd"}))
      << group.dump(1);
  EXPECT_EQ(group[1]["count"], 999);
  EXPECT_EQ(group[2]["count"], 8);
}

TEST_F(preload_nccl_routing, EveryCallIsCountedWithItsBytesByRoute) {
  const json& c = routed().stats["nccl_collectives"];
  ASSERT_TRUE(c.is_object()) << routed().raw.err;
  // 30 all-reduces: 11 routed; the calls of the two failed groups (the route's and NCCL's) and the two
  // on the failed route: route-failed; three groups over two devices and one whose NCCL part is
  // non-blocking: NCCL's; two on communicators destroyed inside their group: run nowhere.
  EXPECT_EQ(c["ncclAllReduce"]["calls"], 30);
  EXPECT_EQ(c["ncclAllReduce"]["copy_engine"]["calls"], 11);
  const json expected_nccl = {{"op-not-supported", {{"calls", 3}, {"bytes", 16 * 2 + 8 * 4 + 8 * 4}}},
                              {"no-sum-kernel", {{"calls", 1}, {"bytes", 8 * 8}}},
                              {"empty", {{"calls", 1}, {"bytes", 0}}},
                              {"capture-not-ready", {{"calls", 1}, {"bytes", 8 * 2}}},
                              {"route-failed", {{"calls", 4}, {"bytes", 777 * 4 * 2 + 9 * 4 + 8 * 2}}},
                              {"several-devices-group", {{"calls", 6}, {"bytes", 4 * 8 * 2 + 999 * 4 + 8 * 2}}},
                              {"non-blocking-group", {{"calls", 1}, {"bytes", 8 * 2}}},
                              {"communicator-gone", {{"calls", 2}, {"bytes", 2 * 8 * 2}}}};
  EXPECT_EQ(c["ncclAllReduce"]["nccl"], expected_nccl) << c["ncclAllReduce"].dump(1);
  EXPECT_EQ(c["ncclReduceScatter"]["copy_engine"]["calls"], 3);
  // reduce-scatter bytes are the input's: 4 fp32 x 2 ranks, 5 fp32 x 3 ranks, 4 bf16 x 2 ranks.
  EXPECT_EQ(c["ncclReduceScatter"]["copy_engine"]["bytes"], 32 + 60 + 16);
  EXPECT_EQ(c["ncclAllGather"]["copy_engine"]["calls"], 5);
  EXPECT_EQ(c["ncclAllGather"]["nccl"], json({{"communicator-gone", {{"calls", 1}, {"bytes", 4 * 4 * 2}}}}));
  EXPECT_EQ(c["ncclAlltoAll"]["copy_engine"]["calls"], 1);
  // Broadcasts, ncclBroadcast's and ncclBcast's, counted once each: two alone and one in a group
  // routed, a bad root and one in a group over two devices left to NCCL.
  EXPECT_EQ(c["ncclBroadcast"]["copy_engine"], json({{"calls", 3}, {"bytes", 2 * 16 * 4 + 6}}));
  EXPECT_EQ(c["ncclBroadcast"]["nccl"], json({{"root-out-of-range", {{"calls", 1}, {"bytes", 16 * 4}}},
                                              {"several-devices-group", {{"calls", 1}, {"bytes", 5 * 4}}}}));
  const json& reach = routed().stats["copy_engine_reach"];
  EXPECT_EQ(reach["calls"], 11 + 3 + 5 + 1 + 3);
  EXPECT_EQ(reach["total_calls"], 30 + 3 + 6 + 1 + 5);
  // The group's send, counted apart and not in the reach.
  EXPECT_EQ(routed().stats["nccl_not_routed"]["ncclSend"]["calls"], 1);
  EXPECT_NE(routed().raw.err.find("copy-engine reach: "), std::string::npos) << routed().raw.err;
}

// Peer copies asked for where NCCL maps no peer's window (the fake's, as ranks sharing one GPU): the
// routes stage, and the process says so once as it happens and in its summary; not asked, nothing is said.
TEST_F(preload_nccl_routing, PeerCopiesAskedForButUnavailableAreSaidOnce) {
  const ClientRun asked = run_client(kRouteClient, "copy-engine", "TANDEM_LOG_LEVEL=info TANDEM_ROUTE_PEER_COPIES=1",
                                     beside_or("../fake_route/libtandem_preload.so", TANDEM_FAKE_ROUTE_PRELOAD_PATH));
  ASSERT_EQ(asked.raw.status, 0) << asked.raw.err;
  json expected = routed().out["steps"];
  expected["device_scalar_address"] = asked.out["steps"]["device_scalar_address"];  // a stack address
  EXPECT_EQ(asked.out["steps"], expected) << "the program's results are the same, peer copies asked for or not";
  const json& route = asked.stats["copy_engine_route"];
  ASSERT_GE(route["routes"].get<int>(), 2) << asked.stats.dump(1);
  EXPECT_EQ(route["peer_copies_unavailable"], route["routes"]);
  const std::string warning = "peer copies asked for, but NCCL maps not every peer's window on this communicator";
  const size_t first = asked.raw.err.find(warning);
  ASSERT_NE(first, std::string::npos) << asked.raw.err;
  EXPECT_EQ(asked.raw.err.find(warning, first + 1), std::string::npos) << "said once:\n" << asked.raw.err;
  EXPECT_NE(asked.raw.err.find("copy-engine route: peer copies asked for, unavailable on " +
                               std::to_string(route["routes"].get<int>()) + " of " +
                               std::to_string(route["routes"].get<int>()) + " routes"),
            std::string::npos)
      << asked.raw.err;
  EXPECT_EQ(routed().stats["copy_engine_route"]["peer_copies_unavailable"], 0);
  EXPECT_EQ(routed().raw.err.find("peer copies asked for"), std::string::npos) << routed().raw.err;
}

// `tandem run --stats F -- bash -c 'CLIENT; echo $$'`: the shell is the process tandem run started (the
// root, which always reports), the client a child that created communicators. The child's numbers are
// the stats file's; the root shell, exiting last with nothing seen, must not replace them with zeros.
TEST(preload_nccl_hooks_stats_file, TheChildThatWorkedWritesItNotTheRootShell) {
  const fs::path stats = fs::temp_directory_path() / ("tandem_nccl_stats_" + std::to_string(getpid()) + ".json");
  fs::remove(stats);
  const Result r =
      run_shell("env -u LD_LIBRARY_PATH -u TANDEM_POLICY " + sh_quoted(TANDEM_CLI_PATH) +
                " run --log-level error --policy " + sh_quoted(kSettings) + " --stats " + sh_quoted(stats.string()) +
                " -- bash -c " + sh_quoted(sh_quoted(kFakeClient) + " >/dev/null; echo $$"));
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(fs::exists(stats)) << r.err;
  const json written = json::parse(read_file(stats));
  fs::remove(stats);
  const long root_shell = std::stol(r.out);
  EXPECT_NE(written["pid"].get<long>(), root_shell) << "the root shell's zeros replaced the client's numbers";
  EXPECT_EQ(written["nccl_communicators"]["created"], 13);
  EXPECT_EQ(written["nccl_collectives"]["ncclAllReduce"]["calls"], 10);
}

TEST(preload_nccl_hooks_versions, ARouteOnAnNcclOlderThan228IsRefusedWithItsVersion) {
  const ClientRun r = run_client(kFakeClient, "copy-engine", "FAKE_NCCL_VERSION=22703");
  ASSERT_EQ(r.raw.status, 0) << r.raw.err;
  EXPECT_NE(r.raw.err.find("copy-engine route unavailable: the copy-engine route needs NCCL 2.28 or later (CTA "
                           "policy zero, symmetric windows); this process's NCCL is 2.27.3"),
            std::string::npos)
      << r.raw.err;
  ASSERT_TRUE(r.stats.is_object());
  EXPECT_EQ(r.stats["nccl_collectives"]["ncclAllGather"]["nccl"]["route-unavailable"]["calls"], 1);
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

TEST(preload_nccl_hooks_versions, AValueNewerThanItsFieldIsSaidWithTheValue) {
  // 2.27 reads CTAPolicy but knows only default and efficiency: zero came with 2.28 (the token table's
  // later_values), so nccl-cta-policy:zero is said there, and efficiency is not.
  const ClientRun zero = run_client(kFakeClient, "nccl-cta-policy:zero", "FAKE_NCCL_VERSION=22703");
  ASSERT_EQ(zero.raw.status, 0) << zero.raw.err;
  EXPECT_NE(zero.raw.err.find("nccl-cta-policy:zero needs NCCL 2.28 or later; this process's NCCL is 2.27.3: not "
                              "applied"),
            std::string::npos)
      << zero.raw.err;
  const ClientRun efficiency = run_client(kFakeClient, "nccl-cta-policy:efficiency", "FAKE_NCCL_VERSION=22703");
  ASSERT_EQ(efficiency.raw.status, 0) << efficiency.raw.err;
  EXPECT_EQ(efficiency.raw.err.find(" needs NCCL "), std::string::npos) << efficiency.raw.err;
}

TEST(preload_nccl_hooks_versions, AOneSidedCtaBoundOnAnNcclOlderThan217IsSaid) {
  // 2.16.5 knows no minCTAs or maxCTAs: either bound alone is lost without a word otherwise.
  for (const char* policy : {"nccl-ctas:..16", "nccl-ctas:4.."}) {
    const ClientRun r = run_client(kFakeClient, policy, "FAKE_NCCL_VERSION=21605");
    ASSERT_EQ(r.raw.status, 0) << r.raw.err;
    EXPECT_NE(r.raw.err.find("nccl-ctas needs NCCL 2.17 or later; this process's NCCL is 2.16.5: not applied"),
              std::string::npos)
        << policy << ": " << r.raw.err;
  }
}

TEST(preload_nccl_hooks_versions, EachSettingAtItsVersionsEdges) {
  // nccl-cga is 2.17's too; at 2.17.0 exactly the CTA bounds and the cluster size apply (only the CTA policy,
  // 2.27's, is said), at 2.27.0 exactly everything does; and the route needs 2.28.0, not more.
  const ClientRun cga = run_client(kFakeClient, "nccl-cga:1", "FAKE_NCCL_VERSION=21605");
  ASSERT_EQ(cga.raw.status, 0) << cga.raw.err;
  EXPECT_NE(cga.raw.err.find("nccl-cga needs NCCL 2.17 or later; this process's NCCL is 2.16.5: not applied"),
            std::string::npos)
      << cga.raw.err;
  const ClientRun at_217 = run_client(kFakeClient, kSettings, "FAKE_NCCL_VERSION=21700");
  ASSERT_EQ(at_217.raw.status, 0) << at_217.raw.err;
  EXPECT_NE(at_217.raw.err.find("nccl-cta-policy needs NCCL 2.27 or later; this process's NCCL is 2.17.0"),
            std::string::npos)
      << at_217.raw.err;
  EXPECT_EQ(at_217.raw.err.find("nccl-ctas needs"), std::string::npos) << at_217.raw.err;
  EXPECT_EQ(at_217.raw.err.find("nccl-cga needs"), std::string::npos) << at_217.raw.err;
  const ClientRun at_227 = run_client(kFakeClient, kSettings, "FAKE_NCCL_VERSION=22700");
  ASSERT_EQ(at_227.raw.status, 0) << at_227.raw.err;
  EXPECT_EQ(at_227.raw.err.find(" needs NCCL "), std::string::npos) << at_227.raw.err;
  // With every device hidden the route is unavailable for want of a device, not of NCCL's version: the
  // version is checked first. Hidden on a GPU machine too, where the fake's communicators would otherwise
  // give the route a real device and peers that never answer.
  const ClientRun at_228 = run_client(kFakeClient, "copy-engine", "CUDA_VISIBLE_DEVICES= FAKE_NCCL_VERSION=22800");
  ASSERT_EQ(at_228.raw.status, 0) << at_228.raw.err;
  EXPECT_EQ(at_228.raw.err.find("needs NCCL 2.28 or later"), std::string::npos) << at_228.raw.err;
  EXPECT_NE(at_228.raw.err.find("no usable CUDA device for the copy-engine route"), std::string::npos)
      << at_228.raw.err;
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
  // Every NCCL hook of the hook list, uncalled.
#define TANDEM_EXPECT_UNCALLED(name, ret, params, args) EXPECT_EQ(with.stats["calls_by_hook"][#name], 0) << #name;
  TANDEM_NCCL_HOOKS(TANDEM_EXPECT_UNCALLED)
#undef TANDEM_EXPECT_UNCALLED
  EXPECT_TRUE(with.stats["nccl_collectives"].empty());
  EXPECT_EQ(with.stats["nccl_communicators"]["created"], 0);
}

}  // namespace
