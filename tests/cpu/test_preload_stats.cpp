// The interposer's bookkeeping: the hook list, the packed NCCL footprint, the lock-free decision
// cache, the counters and the exit summary (text and JSON).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "preload/collective_footprint.h"
#include "preload/decision_cache.h"
#include "preload/hooked_symbols.h"
#include "preload/stats.h"

namespace tandem::preload {
namespace {

TEST(preload_hook_list, NamesAreUniqueAndFamiliesSplitCorrectly) {
  std::set<std::string> names(std::begin(kHookNames), std::end(kHookNames));
  EXPECT_EQ(names.size(), static_cast<size_t>(kHookCount));
  // 14 driver (the launches, the resolvers, and the event records and waits the targeted compute
  // controls follow), 3 cuBLAS, 1 CUPTI (the timeline's hand-over), 2 libc exits without handlers
  // (_exit, _Exit: the exit report), 22 NCCL (ncclGroupStart/End and the pre-multiplied sums' for the
  // copy-engine route, the broadcasts counted, reduce, send and receive counted and never routed,
  // ncclCommShrink's children configured)
  EXPECT_EQ(kHookCount, 42);
  EXPECT_EQ(kDriverHookCount, 14);
  EXPECT_EQ(family_of(Hook::cuStreamWaitEvent_ptsz), HookFamily::Driver);
  EXPECT_EQ(family_of(Hook::cublasSetStream_v2), HookFamily::Library);
#define TANDEM_COUNT_NCCL_HOOK(name, ret, params, args) +1
  EXPECT_EQ(0 TANDEM_NCCL_HOOKS(TANDEM_COUNT_NCCL_HOOK), 22);
#undef TANDEM_COUNT_NCCL_HOOK
  EXPECT_EQ(family_of(Hook::ncclAllReduce), HookFamily::Library);
  EXPECT_EQ(family_of(Hook::_Exit), HookFamily::Library);
  EXPECT_EQ(family_of(Hook::cuptiActivityRegisterCallbacks), HookFamily::Library);
  EXPECT_EQ(family_of(Hook::cuLaunchKernel), HookFamily::Driver);
  EXPECT_EQ(family_of(Hook::cuGetProcAddress_v2), HookFamily::Driver);
  EXPECT_EQ(family_of(Hook::cublasCreate_v2), HookFamily::Library);
  EXPECT_EQ(family_of(Hook::cublasLtMatmulDescCreate), HookFamily::Library);
  EXPECT_STREQ(name_of(Hook::cuLaunchKernelEx_ptsz), "cuLaunchKernelEx_ptsz");
}

TEST(preload_hook_list, EveryLaunchEntryPointHasItsPerThreadStreamTwin) {
  int launches = 0;
  for (int i = 0; i < kHookCount; ++i) {
    const Hook h = static_cast<Hook>(i);
    if (!is_launch_hook(h)) continue;
    ++launches;
    const std::string name = name_of(h);
    const bool is_twin = name.size() > 5 && name.compare(name.size() - 5, 5, "_ptsz") == 0;
    const std::string twin = is_twin ? name.substr(0, name.size() - 5) : name + "_ptsz";
    EXPECT_TRUE(std::set<std::string>(std::begin(kHookNames), std::end(kHookNames)).count(twin)) << name;
  }
  EXPECT_EQ(launches, 6);
}

TEST(preload_collective_footprint, RoundTrip) {
  KernelFootprint f;
  f.threads_per_block = 640;
  f.regs_per_thread = 96;
  f.static_smem = 10 * 1024;
  f.dynamic_smem = 72 * 1024;
  f.cluster_size = 4;
  const uint64_t packed = pack_footprint(f);
  ASSERT_NE(packed, 0u);
  const auto back = unpack_footprint(packed);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->threads_per_block, 640);
  EXPECT_EQ(back->regs_per_thread, 96);
  EXPECT_EQ(back->static_smem, 10 * 1024);
  EXPECT_EQ(back->dynamic_smem, 72 * 1024);
  EXPECT_EQ(back->cluster_size, 4);
}

TEST(preload_collective_footprint, ZeroMeansNoneAndFieldsSaturate) {
  EXPECT_FALSE(unpack_footprint(0));
  KernelFootprint empty;  // even an all-zero footprint is "present"
  const auto zero = unpack_footprint(pack_footprint(empty));
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->cluster_size, 1);
  KernelFootprint huge;
  huge.threads_per_block = 100000;
  huge.dynamic_smem = int64_t{1} << 40;
  huge.regs_per_thread = -3;
  const auto clamped = unpack_footprint(pack_footprint(huge));
  EXPECT_EQ(clamped->threads_per_block, 4095);
  EXPECT_EQ(clamped->dynamic_smem, (1 << 18) - 1);
  EXPECT_EQ(clamped->regs_per_thread, 0);
}

TEST(preload_decision_cache, StoresOneEntry) {
  DecisionCache cache;
  const DecisionKey a{1, 2}, b{1, 3};
  // An empty cache holds nothing, not even the all-zero key its empty fields look like.
  EXPECT_FALSE(cache.find(DecisionKey{0, 0}));
  EXPECT_FALSE(cache.find(a));
  cache.store(a, 42);
  ASSERT_TRUE(cache.find(a));
  EXPECT_EQ(*cache.find(a), 42u);
  EXPECT_FALSE(cache.find(b));
  cache.store(b, 7);
  EXPECT_FALSE(cache.find(a));
  EXPECT_EQ(*cache.find(b), 7u);
}

TEST(preload_decision_cache, ConcurrentReadersNeverSeeAMixedEntry) {
  // Writers store value = f(key); every hit a reader gets must satisfy it. (How many reads hit
  // depends on scheduling; only a wrong hit is a failure.)
  DecisionCache cache;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w)
    threads.emplace_back([&, w] {
      for (uint64_t i = 0; !stop.load(); ++i) {
        const uint64_t k = (i % 7) + 10 * w;
        cache.store({k, k * 3}, k * 1000 + 1);
        if (i % 64 == 0) std::this_thread::yield();
      }
    });
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&] {
      for (uint64_t i = 0; !stop.load(); ++i) {
        const uint64_t k = i % 17;
        if (const auto v = cache.find({k, k * 3}); v && *v != k * 1000 + 1) bad.fetch_add(1);
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0u);
  // Quiescent again: the last store is found.
  cache.store({5, 15}, 5001);
  ASSERT_TRUE(cache.find({5, 15}));
  EXPECT_EQ(*cache.find({5, 15}), 5001u);
}

Snapshot sample_snapshot() {
  Counters c;
  for (int i = 0; i < 5; ++i) Counters::bump(c.launches);
  Counters::bump(c.calls_by_hook[index_of(Hook::cuLaunchKernel_ptsz)]);
  Counters::bump(c.collective_launches);
  Counters::bump(c.elevation[static_cast<int>(ElevationOutcome::Elevated)]);
  // Bumped out of the outcomes' order, and the later outcome more often: the summary lists reasons
  // in the enum's order, whatever the order or counts of the bumps.
  Counters::bump(c.shaping[static_cast<int>(ShapingOutcome::NotRequested)]);
  for (int i = 0; i < 3; ++i) Counters::bump(c.shaping[static_cast<int>(ShapingOutcome::Cluster)]);
  Counters::bump(c.shaping[static_cast<int>(ShapingOutcome::Cooperative)]);
  Counters::bump(c.shaping[static_cast<int>(ShapingOutcome::Shaped)]);
  Counters::bump(c.captured);
  Snapshot s;
  s.pid = 99;
  s.policy = "shape:2+priority";
  s.compute_controls = "always";
  s.log_level = "warn";
  fill_counters(c, s);
  for (int i = 0; i < 12; ++i)
    s.kernels.push_back({"kernel" + std::to_string(i), "compute", uint64_t(100 - i), "unchanged"});
  return s;
}

TEST(preload_stats, CountersFillTheSnapshot) {
  const Snapshot s = sample_snapshot();
  EXPECT_EQ(s.launches, 5u);
  EXPECT_EQ(s.collectives_elevated, 1u);
  EXPECT_EQ(s.compute_shaped, 1u);
  EXPECT_EQ(s.captured, 1u);
  // Only non-zero skip reasons, and neither "shaped" nor "not-requested".
  ASSERT_EQ(s.skipped.size(), 2u);
  EXPECT_EQ(s.skipped[0], (std::pair<std::string, uint64_t>{"cooperative", 1}));
  EXPECT_EQ(s.skipped[1], (std::pair<std::string, uint64_t>{"cluster", 3}));
  ASSERT_EQ(s.calls_by_hook.size(), static_cast<size_t>(kHookCount));
  EXPECT_EQ(s.calls_by_hook[index_of(Hook::cuLaunchKernel_ptsz)].second, 1u);
}

TEST(preload_stats, ResetClearsEverything) {
  Counters c;
  Counters::bump(c.launches);
  Counters::bump(c.shaping[2]);
  Counters::bump(c.calls_by_hook[0]);
  c.reset();
  Snapshot s;
  fill_counters(c, s);
  EXPECT_EQ(s.launches, 0u);
  EXPECT_TRUE(s.skipped.empty());
  EXPECT_EQ(s.calls_by_hook[0].second, 0u);
}

TEST(preload_stats, TextSummary) {
  const std::string text = render_text(sample_snapshot());
  EXPECT_NE(text.find("tandem[99]: summary: policy shape:2+priority, 5 kernel launches seen"), std::string::npos);
  EXPECT_NE(text.find("nccl launches elevated: 1"), std::string::npos);
  EXPECT_NE(text.find("compute launches shaped: 1; skipped: cooperative 1, cluster 3"), std::string::npos);
  EXPECT_NE(text.find("top 10 kernels"), std::string::npos);
  EXPECT_NE(text.find("kernel9"), std::string::npos);
  EXPECT_EQ(text.find("kernel10"), std::string::npos);
  // Every line carries the prefix.
  size_t lines = 0;
  for (size_t at = 0; (at = text.find('\n', at)) != std::string::npos; ++at) ++lines;
  size_t prefixed = 0;
  for (size_t at = 0; (at = text.find("tandem[99]: ", at)) != std::string::npos; ++at) ++prefixed;
  EXPECT_EQ(lines, prefixed);
}

TEST(preload_stats, TextSummaryOfAProcessWithoutLaunches) {
  Snapshot s;
  s.pid = 1;
  s.policy = "priority";
  const std::string text = render_text(s);
  EXPECT_NE(text.find("0 kernel launches seen"), std::string::npos);
  EXPECT_EQ(text.find("top"), std::string::npos);
}

TEST(preload_stats, JsonSummary) {
  const auto j = nlohmann::json::parse(render_json(sample_snapshot()));
  EXPECT_EQ(j["pid"], 99);
  EXPECT_EQ(j["policy"], "shape:2+priority");
  EXPECT_EQ(j["launches"]["total"], 5);
  EXPECT_EQ(j["launches"]["captured"], 1);
  EXPECT_EQ(j["nccl_elevated"], 1);
  EXPECT_EQ(j["compute_shaped"], 1);
  EXPECT_EQ(j["skipped"]["cooperative"], 1);
  EXPECT_EQ(j["skipped"]["cluster"], 3);
  EXPECT_FALSE(j["skipped"].contains("shaped"));
  EXPECT_EQ(j["calls_by_hook"]["cuLaunchKernel_ptsz"], 1);
  EXPECT_EQ(j["calls_by_hook"].size(), static_cast<size_t>(kHookCount));
  EXPECT_EQ(j["top_kernels"].size(), 10u);
  EXPECT_EQ(j["kernels"].size(), 12u);
  EXPECT_EQ(j["kernels"][0]["name"], "kernel0");
  EXPECT_EQ(j["kernels"][0]["launches"], 100);
  EXPECT_TRUE(j.contains("failures"));
  EXPECT_TRUE(j.contains("cublas"));
}

TEST(preload_stats, ElevationOutcomeNamesAreDistinct) {
  std::set<std::string> names;
  for (int i = 0; i < kElevationOutcomeCount; ++i)
    EXPECT_TRUE(names.insert(to_string(static_cast<ElevationOutcome>(i))).second);
  EXPECT_EQ(names.count("unknown"), 0u);
}

}  // namespace
}  // namespace tandem::preload
