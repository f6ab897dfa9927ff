#pragma once
// What the interposer did, counted with relaxed atomics on the launch path (no lock), and rendered
// at exit as a text summary (stderr) and as JSON (TANDEM_STATS_FILE). Rendering is pure: it works on
// a Snapshot, so the format is tested on CPU.
#include <array>
#include <atomic>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hooked_symbols.h"
#include "shaping_decision.h"
#include "tandem/collective.h"
#include "tandem/copy_engine_eligibility.h"
#include "tandem/stats_counters.h"
#include "tandem/stats_schema.h"

namespace tandem::preload {

// Why an NCCL launch was or was not elevated. Keep kCount last.
enum class ElevationOutcome : uint8_t {
  NotRequested,       // the policy has no `priority`
  Elevated,           // launched with the device's greatest priority
  Excluded,           // TANDEM_INCLUDE / TANDEM_EXCLUDE
  FailedRetry,        // an earlier elevated launch of this kernel failed; never elevated again
  NoDevice,           // no current context / device out of range
  TooManyAttributes,  // the launch already carries more attributes than we copy
  kCount
};
const char* to_string(ElevationOutcome);
inline constexpr int kElevationOutcomeCount = static_cast<int>(ElevationOutcome::kCount);

// A byte total that reached this value stopped counting (a count no buffer has, e.g. SIZE_MAX).
inline constexpr uint64_t kSaturated = UINT64_MAX;

// a * b, or kSaturated when the product does not fit.
inline uint64_t saturating_product(uint64_t a, uint64_t b) { return a != 0 && b > kSaturated / a ? kSaturated : a * b; }
// a + b, or kSaturated when the sum does not fit.
inline uint64_t saturating_sum(uint64_t a, uint64_t b) { return a > kSaturated - b ? kSaturated : a + b; }

// The bytes one NCCL collective call counts: nccl-tests' size (tandem::size_elements) times the
// element size, saturating at kSaturated rather than wrapping.
uint64_t collective_bytes(Collective kind, uint64_t count, int nranks, uint64_t element_bytes);

// The NCCL functions the copy-engine route never takes (a reduce's result stays on one rank; a send or a
// receive pairs two): counted, calls and bytes, and handed to NCCL as the program made them.
inline constexpr std::array<Hook, 3> kNotRoutedHooks = {Hook::ncclReduce, Hook::ncclSend, Hook::ncclRecv};

struct Counters {
#define TANDEM_COUNTER_FIELD(field, object, key, unit, meaning) std::atomic<uint64_t> field{0};
  TANDEM_STATS_COUNTERS(TANDEM_COUNTER_FIELD)
#undef TANDEM_COUNTER_FIELD
  std::array<std::atomic<uint64_t>, kHookCount> calls_by_hook{};  // launches per entry point, resolutions, cuBLAS calls
  std::array<std::atomic<uint64_t>, kShapingOutcomeCount> shaping{};
  std::array<std::atomic<uint64_t>, kElevationOutcomeCount> elevation{};
  // NCCL: calls and bytes (nccl-tests' size of each call) per (collective, route).
  std::array<std::atomic<uint64_t>, kCollectiveCount * kRouteOutcomeCount> collective_routes{};
  std::array<std::atomic<uint64_t>, kCollectiveCount * kRouteOutcomeCount> collective_route_bytes{};
  std::array<std::atomic<uint64_t>, kNotRoutedHooks.size()> not_routed_calls{};  // in kNotRoutedHooks' order
  std::array<std::atomic<uint64_t>, kNotRoutedHooks.size()> not_routed_bytes{};

  static void bump(std::atomic<uint64_t>& c) { c.fetch_add(1, std::memory_order_relaxed); }
  // Adds without wrapping: a total that would pass UINT64_MAX stays there, and reads as saturated.
  static void add_saturating(std::atomic<uint64_t>& c, uint64_t amount) {
    uint64_t now = c.load(std::memory_order_relaxed);
    while (!c.compare_exchange_weak(now, saturating_sum(now, amount), std::memory_order_relaxed)) {
    }
  }
  void reset();  // after fork, in the child
  void count_not_routed(Hook via, uint64_t bytes) {
    for (size_t i = 0; i < kNotRoutedHooks.size(); ++i)
      if (kNotRoutedHooks[i] == via) {
        bump(not_routed_calls[i]);
        add_saturating(not_routed_bytes[i], bytes);
      }
  }
  void count_collective(Collective kind, RouteOutcome outcome, uint64_t bytes) {
    const int slot = static_cast<int>(kind) * kRouteOutcomeCount + static_cast<int>(outcome);
    bump(collective_routes[slot]);
    add_saturating(collective_route_bytes[slot], bytes);
  }
};

// Calls and bytes of one route.
struct RouteCount {
  std::string route;  // "copy-engine" or the reason NCCL took them (tandem::RouteOutcome)
  uint64_t calls = 0;
  uint64_t bytes = 0;
};

// One NCCL function the route does not take, as the summary lists it.
struct FunctionCount {
  std::string name;  // "ncclSend"
  uint64_t calls = 0;
  uint64_t bytes = 0;  // count × element size
};

// One NCCL collective function's calls, as the summary lists them.
struct CollectiveSummary {
  std::string name;  // "ncclAllReduce"
  uint64_t calls = 0;
  uint64_t bytes = 0;
  RouteCount copy_engine;               // taken by the copy-engine route
  std::vector<RouteCount> nccl_routes;  // left to NCCL, by reason, non-zero only
};

struct KernelSummary {
  std::string name;  // demangled when possible
  std::string kind;  // "nccl" | "compute"
  uint64_t launches = 0;
  std::string decision;  // "elevated", "shaped 3->2 blocks/SM (+77 KiB)", "skipped: cooperative", ...
};

struct Snapshot {
  long pid = 0;
  std::string policy;
  bool policy_valid = true;
  std::string compute_controls;  // "targeted", "always", "" (no shape or sm-target)
  std::string log_level;
#define TANDEM_SNAPSHOT_FIELD(field, object, key, unit, meaning) uint64_t field = 0;
  TANDEM_STATS_COUNTERS(TANDEM_SNAPSHOT_FIELD)
#undef TANDEM_SNAPSHOT_FIELD
  std::vector<std::pair<std::string, uint64_t>> calls_by_hook;  // in hook-list order
  uint64_t collectives_elevated = 0;
  uint64_t compute_shaped = 0;
  std::vector<std::pair<std::string, uint64_t>> skipped;                   // compute, by reason, non-zero only
  std::vector<std::pair<std::string, uint64_t>> collectives_not_elevated;  // by reason, non-zero only
  std::vector<CollectiveSummary> collectives;  // functions called at least once, in tandem::Collective order
  std::vector<FunctionCount> not_routed;       // kNotRoutedHooks called at least once, in that order
  bool copy_engine_requested = false;          // the policy names copy-engine (the reach line)
  std::string communicator_settings;           // the nccl-* settings of the policy, "" for none
  // NCCL variables the user set that override those settings ("NCCL_MAX_CTAS=16"): NCCL's win.
  std::vector<std::string> nccl_variables;
  std::string last_collective_footprint;  // "" if none, else "640 threads, 96 regs, ..."
  std::vector<KernelSummary> kernels;     // by launches, descending
  nlohmann::json timeline;                // the timeline (tandem/process_timeline_json.h), null when off
};

// Fills the counter part of a snapshot (the caller adds identity, kernels and footprint).
void fill_counters(const Counters&, Snapshot&);

// The stderr summary: a few lines, each prefixed "tandem[pid]: ", with the top `top_n` kernels.
std::string render_text(const Snapshot&, size_t top_n = 10);
// The JSON document for TANDEM_STATS_FILE (all kernels, and `top_kernels` = the first 10).
std::string render_json(const Snapshot&);

}  // namespace tandem::preload
