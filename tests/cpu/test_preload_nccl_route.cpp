// The pure parts of the interposer's NCCL hooks: the communicator
// settings written over a program's ncclConfig_t, the communicator registry (with its pre-multiplied
// sums) and the summary's NCCL lines (calls and bytes by route, the copy-engine reach). Expectations are worked out by
// hand from NCCL's rules, not from the code.
#include <gtest/gtest.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "preload/nccl_group_result.h"
#include "preload/nccl_registry.h"
#include "preload/nccl_settings.h"
#include "preload/route/route_abi_call.h"
#include "preload/stats.h"
#include "tandem/policy.h"

namespace {

using namespace tandem::preload;
using tandem::OverlapPolicy;
using tandem::parse_policy;

using tandem::Collective;
using tandem::Reduction;
using tandem::RouteOutcome;

// The call crosses the route library's C ABI unchanged, every field, both ways (route_abi_call.h).
TEST(preload_nccl_route, ACallCrossesTheCAbiUnchanged) {
  int send = 0, recv = 0, scalar = 0;
  tandem::CopyEngineCall call;
  call.kind = Collective::Broadcast;
  call.send = &send;
  call.recv = &recv;
  call.count = 12345;
  call.dtype = ncclFloat16;
  call.reduction = Reduction::PreMulSum;
  call.scalar = 0.25f;
  call.device_scalar = &scalar;
  call.root = 3;
  call.stream = reinterpret_cast<cudaStream_t>(uintptr_t(0x40));
  const tandem_nccl_route_call abi = to_route_abi(call);
  EXPECT_EQ(abi.kind, 4);
  EXPECT_EQ(abi.reduction, 2);
  ASSERT_TRUE(is_valid_route_abi(&abi));
  const tandem::CopyEngineCall back = from_route_abi(abi);
  EXPECT_EQ(back.kind, call.kind);
  EXPECT_EQ(back.send, call.send);
  EXPECT_EQ(back.recv, call.recv);
  EXPECT_EQ(back.count, call.count);
  EXPECT_EQ(back.dtype, call.dtype);
  EXPECT_EQ(back.reduction, call.reduction);
  EXPECT_EQ(back.scalar, call.scalar);
  EXPECT_EQ(back.device_scalar, call.device_scalar);
  EXPECT_EQ(back.root, call.root);
  EXPECT_EQ(back.stream, call.stream);
  // A C caller's kind or reduction past the enums is refused before it is converted.
  tandem_nccl_route_call bad = abi;
  bad.kind = tandem::kCollectiveCount;
  EXPECT_FALSE(is_valid_route_abi(&bad));
  bad = abi;
  bad.reduction = -1;
  EXPECT_FALSE(is_valid_route_abi(&bad));
  EXPECT_FALSE(is_valid_route_abi(nullptr));
}

TEST(preload_nccl_stats, TheRouteLineShowsStagedAndPoolBytes) {
  Counters c;
  c.count_collective(Collective::AllReduce, RouteOutcome::CopyEngine, 2048);
  c.count_collective(Collective::AllGather, RouteOutcome::CopyEngine, 64);
  c.copy_engine_staged_bytes = 4096 + 96;
  c.copy_engine_peer_bytes = 8192;
  c.copy_engine_pool_bytes = 2u << 20;
  c.copy_engine_registrations = 2;
  c.copy_engine_captured = 1;
  c.copy_engine_routes = 1;
  Snapshot s;
  s.pid = 9;
  fill_counters(c, s);
  const std::string text = render_text(s);
  EXPECT_NE(text.find("tandem[9]: copy-engine route: 2 calls (1 captured into graphs), 4192 B staged, 8192 B copied "
                      "with the peers, window pool 2097152 B over 1 route (2 registrations)\n"),
            std::string::npos)
      << text;
  const auto j = nlohmann::json::parse(render_json(s));
  EXPECT_EQ(j["copy_engine_route"]["captured"], 1);
  EXPECT_EQ(j["copy_engine_route"]["staged_bytes"], 4192);
  EXPECT_EQ(j["copy_engine_route"]["peer_bytes"], 8192);
  EXPECT_EQ(j["copy_engine_route"]["pool_bytes"], 2 * 1024 * 1024);
  EXPECT_EQ(j["copy_engine_route"]["routes"], 1);
  EXPECT_EQ(j["copy_engine_route"]["registrations"], 2);
  EXPECT_EQ(j["copy_engine_route"]["peer_copies_unavailable"], 0);
  EXPECT_EQ(text.find("peer copies asked for"), std::string::npos) << text;
  Snapshot none;
  fill_counters(Counters{}, none);
  EXPECT_EQ(render_text(none).find("copy-engine route"), std::string::npos);
}

// Peer copies asked for where NCCL maps no peer's window stage: the summary says so rather than leave
// the user to infer it from a zero.
TEST(preload_nccl_stats, PeerCopiesAskedForButUnavailableAreSaid) {
  Counters c;
  c.count_collective(Collective::AllReduce, RouteOutcome::CopyEngine, 2048);
  c.copy_engine_staged_bytes = 2048;
  c.copy_engine_routes = 3;
  c.copy_engine_peer_copies_unavailable = 2;
  Snapshot s;
  s.pid = 9;
  fill_counters(c, s);
  const std::string text = render_text(s);
  EXPECT_NE(text.find("tandem[9]: copy-engine route: peer copies asked for, unavailable on 2 of 3 routes (NCCL maps "
                      "not every peer's window: ranks of other nodes, or sharing one GPU): they stage\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(nlohmann::json::parse(render_json(s))["copy_engine_route"]["peer_copies_unavailable"], 2);
}

// ---- configuration overlay ------------------------------------------------------------------------

TEST(preload_nccl_settings, OnlyCommunicatorTokensAreKept) {
  const OverlapPolicy s = communicator_settings(parse_policy("priority+shape:2+nccl-ctas:2..16+nccl-cga:1"));
  EXPECT_FALSE(s.comm_priority);
  EXPECT_EQ(s.shape.kind, tandem::ShapeTarget::Kind::None);
  EXPECT_EQ(s.nccl_min_ctas, 2);
  EXPECT_EQ(s.nccl_max_ctas, 16);
  EXPECT_EQ(s.nccl_cga_cluster_size, 1);
  // copy-engine's CTA policy zero belongs to the data path, not to every communicator.
  EXPECT_FALSE(communicator_settings(parse_policy("copy-engine")).copy_engine);
}

TEST(preload_nccl_settings, NoProgramConfigStartsFromTheInitializer) {
  const auto c = overlay_config(parse_policy("nccl-ctas:16+nccl-cga:1"), nullptr);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->get()->magic, 0xcafebeefu);
  EXPECT_EQ(c->get()->size, sizeof(ncclConfig_t));
  EXPECT_EQ(c->get()->minCTAs, 16);
  EXPECT_EQ(c->get()->maxCTAs, 16);
  EXPECT_EQ(c->get()->cgaClusterSize, 1);
  EXPECT_EQ(c->get()->blocking, NCCL_CONFIG_UNDEF_INT);  // as ncclCommInitRank has it: NCCL decides
  EXPECT_EQ(c->get()->CTAPolicy, NCCL_CONFIG_UNDEF_INT);
}

TEST(preload_nccl_settings, TheProgramsOtherFieldsSurvive) {
  ncclConfig_t program = NCCL_CONFIG_INITIALIZER;
  program.blocking = 0;
  program.netName = "Socket";
  program.minCTAs = 2;
  program.cgaClusterSize = 4;
  const auto c = overlay_config(parse_policy("nccl-ctas:..16+nccl-cta-policy:efficiency"), &program);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->get()->blocking, 0);
  EXPECT_STREQ(c->get()->netName, "Socket");
  EXPECT_EQ(c->get()->minCTAs, 2);  // the policy names only the maximum
  EXPECT_EQ(c->get()->maxCTAs, 16);
  EXPECT_EQ(c->get()->cgaClusterSize, 4);  // not named by the policy
  EXPECT_EQ(c->get()->CTAPolicy, NCCL_CTA_POLICY_EFFICIENCY);
  EXPECT_EQ(program.maxCTAs, NCCL_CONFIG_UNDEF_INT);  // the program's own struct untouched
}

TEST(preload_nccl_settings, AnOlderHeadersConfigIsExtendedAndItsVersionRaised) {
  // A program built with NCCL 2.17's header: its struct ends before splitShare. What lies past its
  // end must not be read (here: a field set to a sentinel that must not show up).
  ncclConfig_t program = NCCL_CONFIG_INITIALIZER;
  program.size = offsetof(ncclConfig_t, splitShare);
  program.version = NCCL_VERSION(2, 17, 0);
  program.blocking = 1;
  program.CTAPolicy = 12345;  // beyond its size: garbage to us
  const auto c = overlay_config(parse_policy("nccl-cga:2"), &program);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->get()->size, sizeof(ncclConfig_t));
  EXPECT_EQ(c->get()->version, static_cast<unsigned>(NCCL_VERSION_CODE));  // else NCCL skips fields >= 2.17's
  EXPECT_EQ(c->get()->blocking, 1);
  EXPECT_EQ(c->get()->cgaClusterSize, 2);
  EXPECT_EQ(c->get()->CTAPolicy, NCCL_CONFIG_UNDEF_INT);
}

TEST(preload_nccl_settings, ANewerHeadersConfigKeepsItsUnknownFields) {
  // 2.30's struct: ours plus two ints we know nothing about.
  struct Newer {
    ncclConfig_t known;
    int graph_usage_mode;
    int num_rma_ctx;
  } program{NCCL_CONFIG_INITIALIZER, 7, 9};
  program.known.size = sizeof(Newer);
  program.known.version = NCCL_VERSION(2, 30, 0);
  const auto c = overlay_config(parse_policy("nccl-ctas:8"), &program.known);
  ASSERT_TRUE(c);
  const auto* out = reinterpret_cast<const Newer*>(c->get());
  EXPECT_EQ(out->known.size, sizeof(Newer));
  EXPECT_EQ(out->known.version, static_cast<unsigned>(NCCL_VERSION(2, 30, 0)));
  EXPECT_EQ(out->known.maxCTAs, 8);
  EXPECT_EQ(out->graph_usage_mode, 7);
  EXPECT_EQ(out->num_rma_ctx, 9);
}

// NCCL's rule (init.cc): NCCL_COMM_BLOCKING, when 0 or 1, wins over the configuration; undefined is blocking.
TEST(preload_nccl_settings, NonBlockingFollowsNcclsRule) {
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  EXPECT_FALSE(is_non_blocking(&c, std::nullopt));
  c.blocking = 0;
  EXPECT_TRUE(is_non_blocking(&c, std::nullopt));
  EXPECT_FALSE(is_non_blocking(&c, 1));
  EXPECT_TRUE(is_non_blocking(nullptr, 0));
  EXPECT_FALSE(is_non_blocking(nullptr, std::nullopt));
  EXPECT_TRUE(is_non_blocking(nullptr, std::nullopt, true));  // a child without a configuration: its parent's
  ncclConfig_t zeros{};                                       // not a configuration: NCCL refuses it
  EXPECT_FALSE(is_non_blocking(&zeros, std::nullopt));
}

TEST(preload_nccl_settings, WhatIsNotAConfigIsLeftToNccl) {
  ncclConfig_t zeros{};
  EXPECT_FALSE(overlay_config(parse_policy("nccl-cga:1"), &zeros));
  ncclConfig_t huge = NCCL_CONFIG_INITIALIZER;
  huge.size = 1u << 30;
  EXPECT_FALSE(overlay_config(parse_policy("nccl-cga:1"), &huge));
}

// ---- registry --------------------------------------------------------------------------------------

TEST(preload_nccl_registry, AddFindUpdateRemove) {
  CommunicatorRegistry registry;
  int a = 0, b = 0;
  registry.add(&a, {0, -1, -1, "nccl-cga:1"});
  registry.add(&b, {4, 3, 1, ""});
  EXPECT_EQ(registry.size(), 2u);
  registry.update(&a, {2, 1, 0, "ignored"});
  const auto found = registry.find(&a);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->nranks, 2);
  EXPECT_EQ(found->rank, 1);
  EXPECT_EQ(found->settings, "nccl-cga:1");  // update fills the size, never the settings
  registry.remove(&a);
  EXPECT_FALSE(registry.find(&a));
  registry.update(&a, {8, 0, 0, ""});  // destroyed meanwhile: not brought back
  EXPECT_FALSE(registry.find(&a));
  EXPECT_EQ(registry.find(&b)->nranks, 4);
}

TEST(preload_nccl_registry, PreMultipliedSumsLiveWithTheirCommunicator) {
  CommunicatorRegistry registry;
  int a = 0, b = 0, device_scalar = 0;
  registry.add(&a, {2, 0, 0, ""});
  registry.add_pre_mul_sum(&a, 5, {9, 0.25f, nullptr});
  registry.add_pre_mul_sum(&a, 6, {7, 1, &device_scalar});
  registry.add_pre_mul_sum(&b, 5, {9, 0.5f, nullptr});  // an unknown communicator: ignored
  ASSERT_EQ(registry.find(&a)->pre_mul_sums.size(), 2u);
  EXPECT_EQ(registry.find(&a)->pre_mul_sums.at(5).host_value, 0.25f);
  EXPECT_EQ(registry.find(&a)->pre_mul_sums.at(6).device_value, &device_scalar);
  EXPECT_FALSE(registry.find(&b));
  registry.remove_pre_mul_sum(&a, 5);
  EXPECT_EQ(registry.find(&a)->pre_mul_sums.count(5), 0u);
  registry.update(&a, {2, 1, 0, ""});  // filling in the size keeps the ops
  EXPECT_EQ(registry.find(&a)->pre_mul_sums.count(6), 1u);
  registry.remove(&a);  // NCCL may reuse the handle: nothing of the old one survives
  registry.add(&a, {2, 0, 0, ""});
  EXPECT_TRUE(registry.find(&a)->pre_mul_sums.empty());
}

TEST(preload_nccl_registry, ConcurrentRanksDoNotLoseEntries) {
  CommunicatorRegistry registry;
  std::vector<int> handles(8 * 500);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        int* h = &handles[t * 500 + i];
        registry.add(h, {2, t, t, ""});
        if (i % 2) registry.remove(h);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(registry.size(), 8u * 250u);
}

// ---- summary -------------------------------------------------------------------------------------

TEST(preload_nccl_stats, CountsBecomeOneLinePerCollectiveCalled) {
  Counters c;
  c.count_collective(Collective::AllReduce, RouteOutcome::RouteUnavailable, 2048);
  c.count_collective(Collective::AllReduce, RouteOutcome::RouteUnavailable, 2048);
  c.count_collective(Collective::AllReduce, RouteOutcome::OpNotSupported, 100);
  c.count_collective(Collective::AllGather, RouteOutcome::CopyEngine, 64);
  c.communicators_created = 3;
  c.communicators_configured = 2;
  c.communicators_unconfigured = 1;
  c.communicators_destroyed = 3;
  Snapshot s;
  s.pid = 7;
  fill_counters(c, s);
  s.communicator_settings = "nccl-ctas:16";
  ASSERT_EQ(s.collectives.size(), 2u);  // reduce-scatter and all-to-all never called: not listed
  const std::string text = render_text(s);
  EXPECT_NE(text.find("tandem[7]: nccl communicators: 3 created, 2 configured (nccl-ctas:16), 1 left "
                      "unconfigured, 3 destroyed\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tandem[7]: ncclAllReduce: 3 calls, 4196 B; copy-engine 0 (0 B), nccl 3 (4196 B: "
                      "op-not-supported 1 / 100 B, route-unavailable 2 / 4096 B)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tandem[7]: ncclAllGather: 1 calls, 64 B; copy-engine 1 (64 B), nccl 0 (0 B)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("ncclReduceScatter"), std::string::npos);
  // The reach line only where the policy asks for the route.
  EXPECT_EQ(text.find("copy-engine reach"), std::string::npos);
  s.copy_engine_requested = true;
  EXPECT_NE(render_text(s).find("tandem[7]: copy-engine reach: 1.50 % of the collective bytes (64 of 4260 B, 1 of 4 "
                                "calls)\n"),
            std::string::npos)
      << render_text(s);
  const auto j = nlohmann::json::parse(render_json(s));
  EXPECT_EQ(j["nccl_collectives"]["ncclAllReduce"]["calls"], 3);
  EXPECT_EQ(j["nccl_collectives"]["ncclAllReduce"]["bytes"], 4196);
  EXPECT_EQ(j["nccl_collectives"]["ncclAllReduce"]["nccl"]["route-unavailable"]["calls"], 2);
  EXPECT_EQ(j["nccl_collectives"]["ncclAllReduce"]["nccl"]["route-unavailable"]["bytes"], 4096);
  EXPECT_EQ(j["nccl_collectives"]["ncclAllReduce"]["nccl"]["op-not-supported"]["bytes"], 100);
  EXPECT_EQ(j["nccl_collectives"]["ncclAllGather"]["copy_engine"]["calls"], 1);
  EXPECT_EQ(j["nccl_collectives"]["ncclAllGather"]["copy_engine"]["bytes"], 64);
  EXPECT_EQ(j["copy_engine_reach"]["bytes"], 64);
  EXPECT_EQ(j["copy_engine_reach"]["total_bytes"], 4260);
  EXPECT_EQ(j["copy_engine_reach"]["calls"], 1);
  EXPECT_EQ(j["copy_engine_reach"]["total_calls"], 4);
  EXPECT_DOUBLE_EQ(j["copy_engine_reach"]["share_of_bytes"].get<double>(), 64.0 / 4260.0);
  EXPECT_EQ(j["copy_engine_reach"]["requested"], true);
  EXPECT_EQ(j["nccl_communicators"]["configured"], 2);
  EXPECT_EQ(j["nccl_communicators"]["settings"], "nccl-ctas:16");
}

TEST(preload_nccl_stats, NoNcclNoNcclLines) {
  Snapshot s;
  fill_counters(Counters{}, s);
  const std::string text = render_text(s);
  EXPECT_EQ(text.find("nccl communicators"), std::string::npos);
  EXPECT_EQ(text.find("ncclAllReduce"), std::string::npos);
  EXPECT_TRUE(nlohmann::json::parse(render_json(s))["nccl_collectives"].empty());
}

TEST(preload_nccl_stats, ResetAfterForkClearsNcclCounts) {
  Counters c;
  c.count_collective(Collective::AllToAll, RouteOutcome::NotRequested, 10);
  c.communicators_created = 1;
  c.reset();
  Snapshot s;
  fill_counters(c, s);
  EXPECT_TRUE(s.collectives.empty());
  EXPECT_EQ(s.communicators_created, 0u);
}

TEST(preload_nccl_route, WhatTheProgramsGroupEndReturns) {
  // nccl.h's values: ncclSuccess 0, ncclSystemError 2, ncclInternalError 3, ncclInvalidArgument 4,
  // ncclInProgress 7.
  constexpr int ok = 0, system = 2, internal = 3, invalid = 4, in_progress = 7;
  EXPECT_EQ(group_end_result(ok, ok, ok), ok);
  EXPECT_EQ(group_end_result(in_progress, ok, ok), in_progress);  // a non-blocking group stays in progress
  // NCCL's own failure: the group failed, whatever the held calls did.
  EXPECT_EQ(group_end_result(system, ok, ok), system);
  EXPECT_EQ(group_end_result(system, internal, invalid), system);
  // The routed part failed partway: the program gets its error, also while NCCL's part is in progress.
  EXPECT_EQ(group_end_result(ok, internal, ok), internal);
  EXPECT_EQ(group_end_result(in_progress, internal, ok), internal);
  // A held call NCCL refused once handed back: the refusal the program would have had at the call.
  EXPECT_EQ(group_end_result(ok, ok, invalid), invalid);
  EXPECT_EQ(group_end_result(in_progress, ok, invalid), invalid);
}

}  // namespace
