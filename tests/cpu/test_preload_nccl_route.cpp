// The pure parts of the interposer's NCCL hooks: the route decision, the payload size, the
// communicator settings written over a program's ncclConfig_t, the communicator registry and the
// summary's NCCL lines. Expectations are worked out by hand from NCCL's rules, not from the code.
#include <gtest/gtest.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "preload/nccl_registry.h"
#include "preload/nccl_route.h"
#include "preload/nccl_settings.h"
#include "preload/stats.h"
#include "tandem/policy.h"

namespace {

using namespace tandem::preload;
using tandem::OverlapPolicy;
using tandem::parse_policy;

CollectiveRequest all_reduce(size_t count, ElementType type, bool sum, int nranks) {
  CollectiveRequest r;
  r.kind = CollectiveKind::AllReduce;
  r.count = count;
  r.type = type;
  r.element_bytes = type == ElementType::Fp32 ? 4 : 2;
  r.op_is_sum = sum;
  r.nranks = nranks;
  return r;
}

RouteFacts facts(bool requested) {
  RouteFacts f;
  f.copy_engine_requested = requested;
  return f;
}
const RouteFacts kAvailable = facts(true);   // policy asks, route there
const RouteFacts kNotWanted = facts(false);  // no copy-engine in the policy
const RouteFacts kWanted = [] {              // policy asks, the route library could not be loaded
  RouteFacts f = facts(true);
  f.route_unavailable = true;
  return f;
}();

TEST(preload_nccl_route, WithoutCopyEngineInThePolicyEverythingStaysWithNccl) {
  EXPECT_EQ(decide_route(all_reduce(8, ElementType::Bf16, true, 2), kNotWanted), RouteOutcome::NotRequested);
  // Even what the route could never take reads "not requested": the policy's wish comes first.
  EXPECT_EQ(decide_route(all_reduce(7, ElementType::Other, false, 0), kNotWanted), RouteOutcome::NotRequested);
}

TEST(preload_nccl_route, EligibleReductionsTakeTheCopyEngineOnceAvailable) {
  for (ElementType t : {ElementType::Bf16, ElementType::Fp16, ElementType::Fp32}) {
    EXPECT_EQ(decide_route(all_reduce(8, t, true, 2), kAvailable), RouteOutcome::CopyEngine);
    EXPECT_EQ(decide_route(all_reduce(8, t, true, 2), kWanted), RouteOutcome::RouteUnavailable);
  }
}

TEST(preload_nccl_route, IneligibleReductionsSayWhy) {
  EXPECT_EQ(decide_route(all_reduce(8, ElementType::Fp32, false, 2), kAvailable), RouteOutcome::OpNotSum);
  EXPECT_EQ(decide_route(all_reduce(8, ElementType::Other, true, 2), kAvailable), RouteOutcome::NoSumKernel);
  // 12 elements over 8 ranks: chunks of 1.5 elements.
  EXPECT_EQ(decide_route(all_reduce(12, ElementType::Bf16, true, 8), kAvailable), RouteOutcome::CountNotDivisible);
  EXPECT_EQ(decide_route(all_reduce(16, ElementType::Bf16, true, 8), kAvailable), RouteOutcome::CopyEngine);
  EXPECT_EQ(decide_route(all_reduce(8, ElementType::Bf16, true, 0), kAvailable), RouteOutcome::UnknownCommunicator);
  // The reasons that hold whatever the route's state are given before "unavailable".
  EXPECT_EQ(decide_route(all_reduce(8, ElementType::Fp32, false, 2), kWanted), RouteOutcome::OpNotSum);
}

TEST(preload_nccl_route, ReduceScatterCountIsPerRankSoAlwaysDivides) {
  CollectiveRequest r = all_reduce(7, ElementType::Fp16, true, 4);
  r.kind = CollectiveKind::ReduceScatter;
  EXPECT_EQ(decide_route(r, kAvailable), RouteOutcome::CopyEngine);
  r.op_is_sum = false;
  EXPECT_EQ(decide_route(r, kAvailable), RouteOutcome::OpNotSum);
}

TEST(preload_nccl_route, GatherAndAllToAllIgnoreTheOpButMoveOnlyTheThreeTypes) {
  CollectiveRequest r = all_reduce(7, ElementType::Fp16, false, 4);
  r.kind = CollectiveKind::AllGather;
  EXPECT_EQ(decide_route(r, kAvailable), RouteOutcome::CopyEngine);
  r.kind = CollectiveKind::AllToAll;
  EXPECT_EQ(decide_route(r, kAvailable), RouteOutcome::CopyEngine);
  r.type = ElementType::Other;  // int8, fp64...: the route's copy-engine collectives move bf16, fp16, fp32
  EXPECT_EQ(decide_route(r, kAvailable), RouteOutcome::UnsupportedType);
  r.kind = CollectiveKind::AllGather;
  EXPECT_EQ(decide_route(r, kAvailable), RouteOutcome::UnsupportedType);
  r.type = ElementType::Fp16;
  r.kind = CollectiveKind::AllToAll;
  r.in_place = true;
  EXPECT_EQ(decide_route(r, kAvailable), RouteOutcome::InPlaceAllToAll);
  r.kind = CollectiveKind::AllGather;  // in-place all-gather is NCCL's common case
  EXPECT_EQ(decide_route(r, kAvailable), RouteOutcome::CopyEngine);
}

TEST(preload_nccl_route, EmptyCallsStayWithNccl) {
  EXPECT_EQ(decide_route(all_reduce(0, ElementType::Bf16, true, 2), kAvailable), RouteOutcome::Empty);
}

TEST(preload_nccl_route, TheProgramsStateComesAfterTheCallsOwnReasons) {
  RouteFacts grouped = kAvailable;
  grouped.inside_group = true;
  EXPECT_EQ(decide_route(all_reduce(8, ElementType::Bf16, true, 2), grouped), RouteOutcome::InsideGroup);
  // A call the route could never take says so, group or not.
  EXPECT_EQ(decide_route(all_reduce(7, ElementType::Bf16, true, 2), grouped), RouteOutcome::CountNotDivisible);
  RouteFacts non_blocking = kAvailable;
  non_blocking.non_blocking_communicator = true;
  EXPECT_EQ(decide_route(all_reduce(8, ElementType::Fp32, true, 2), non_blocking),
            RouteOutcome::NonBlockingCommunicator);
  RouteFacts failed = kAvailable;
  failed.route_failed = true;
  failed.route_unavailable = true;
  EXPECT_EQ(decide_route(all_reduce(8, ElementType::Fp32, true, 2), failed), RouteOutcome::RouteFailed);
  // Inside a group, a failed route is not even looked at.
  failed.inside_group = true;
  EXPECT_EQ(decide_route(all_reduce(8, ElementType::Fp32, true, 2), failed), RouteOutcome::InsideGroup);
}

TEST(preload_nccl_stats, TheRouteLineShowsStagedAndPoolBytes) {
  Counters c;
  c.count_collective(CollectiveKind::AllReduce, RouteOutcome::CopyEngine, 2048);
  c.count_collective(CollectiveKind::AllGather, RouteOutcome::CopyEngine, 64);
  c.copy_engine_staged_bytes = 4096 + 96;
  c.copy_engine_pool_bytes = 2u << 20;
  c.copy_engine_registrations = 2;
  Snapshot s;
  s.pid = 9;
  fill_counters(c, s);
  const std::string text = render_text(s);
  EXPECT_NE(text.find("tandem[9]: copy-engine route: 2 calls, 4192 B staged, window pool 2097152 B (2 "
                      "registrations)\n"),
            std::string::npos)
      << text;
  const auto j = nlohmann::json::parse(render_json(s));
  EXPECT_EQ(j["copy_engine_route"]["staged_bytes"], 4192);
  EXPECT_EQ(j["copy_engine_route"]["pool_bytes"], 2 * 1024 * 1024);
  EXPECT_EQ(j["copy_engine_route"]["registrations"], 2);
  Snapshot none;
  fill_counters(Counters{}, none);
  EXPECT_EQ(render_text(none).find("copy-engine route"), std::string::npos);
}

TEST(preload_nccl_route, PayloadIsNcclTestsSize) {
  // all-reduce of 1024 bf16: 2048 B whatever the ranks.
  EXPECT_EQ(payload_bytes(all_reduce(1024, ElementType::Bf16, true, 4)), 2048u);
  CollectiveRequest r = all_reduce(1024, ElementType::Fp32, true, 4);
  r.kind = CollectiveKind::AllGather;  // 1024 fp32 from each of 4 ranks: 16 KiB of output
  EXPECT_EQ(payload_bytes(r), 16384u);
  r.kind = CollectiveKind::ReduceScatter;
  EXPECT_EQ(payload_bytes(r), 16384u);
  r.nranks = 0;  // unknown communicator: one rank's share
  EXPECT_EQ(payload_bytes(r), 4096u);
}

TEST(preload_nccl_route, NamesAreNcclFunctionsAndStableReasonTokens) {
  EXPECT_STREQ(to_string(CollectiveKind::AllToAll), "ncclAlltoAll");
  EXPECT_STREQ(to_string(RouteOutcome::RouteUnavailable), "route-unavailable");
  EXPECT_STREQ(to_string(RouteOutcome::InsideGroup), "inside-group");
  EXPECT_STREQ(to_string(RouteOutcome::CountNotDivisible), "count-not-divisible");
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
  c.count_collective(CollectiveKind::AllReduce, RouteOutcome::RouteUnavailable, 2048);
  c.count_collective(CollectiveKind::AllReduce, RouteOutcome::RouteUnavailable, 2048);
  c.count_collective(CollectiveKind::AllReduce, RouteOutcome::OpNotSum, 100);
  c.count_collective(CollectiveKind::AllGather, RouteOutcome::CopyEngine, 64);
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
  EXPECT_NE(text.find("tandem[7]: ncclAllReduce: 3 calls, 4196 B; copy-engine 0, nccl 3 (op-not-sum 1, "
                      "route-unavailable 2)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tandem[7]: ncclAllGather: 1 calls, 64 B; copy-engine 1, nccl 0\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("ncclReduceScatter"), std::string::npos);
  const auto j = nlohmann::json::parse(render_json(s));
  EXPECT_EQ(j["nccl_collectives"]["ncclAllReduce"]["calls"], 3);
  EXPECT_EQ(j["nccl_collectives"]["ncclAllReduce"]["bytes"], 4196);
  EXPECT_EQ(j["nccl_collectives"]["ncclAllReduce"]["nccl"]["route-unavailable"], 2);
  EXPECT_EQ(j["nccl_collectives"]["ncclAllGather"]["copy_engine"], 1);
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
  c.count_collective(CollectiveKind::AllToAll, RouteOutcome::NotRequested, 10);
  c.communicators_created = 1;
  c.reset();
  Snapshot s;
  fill_counters(c, s);
  EXPECT_TRUE(s.collectives.empty());
  EXPECT_EQ(s.communicators_created, 0u);
}

}  // namespace
