#include "stats.h"

#include <cstdio>
#include <iterator>
#include <nlohmann/json.hpp>

#include "tandem/enum_table.h"
#include "tandem/text.h"

namespace tandem::preload {
namespace {

uint64_t load(const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); }

std::string line(long pid, const std::string& text) { return pid_prefix(pid) + text + "\n"; }

std::string join_reasons(const std::vector<std::pair<std::string, uint64_t>>& reasons) {
  std::vector<std::string> items;
  for (const auto& [reason, count] : reasons) items.push_back(reason + " " + std::to_string(count));
  return items.empty() ? "none" : join(items, ", ");
}

nlohmann::json reasons_json(const std::vector<std::pair<std::string, uint64_t>>& reasons) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [reason, count] : reasons) j[reason] = count;
  return j;
}

// A byte total as the summary shows it; a saturated one says so.
std::string bytes_text(uint64_t bytes) {
  return bytes == kSaturated ? "more than " + std::to_string(kSaturated - 1) + " B (saturated)"
                             : std::to_string(bytes) + " B";
}

std::string join_routes(const std::vector<RouteCount>& routes) {
  std::vector<std::string> items;
  for (const auto& r : routes) items.push_back(r.route + " " + std::to_string(r.calls) + " / " + bytes_text(r.bytes));
  return join(items, ", ");
}

nlohmann::json route_json(const RouteCount& r) { return {{"calls", r.calls}, {"bytes", r.bytes}}; }

// What share of the program's collective traffic the copy-engine route took.
struct Reach {
  uint64_t calls = 0, bytes = 0, total_calls = 0, total_bytes = 0;
};

Reach reach_of(const Snapshot& s) {
  Reach r;
  for (const auto& c : s.collectives) {
    r.calls += c.copy_engine.calls;
    r.bytes = saturating_sum(r.bytes, c.copy_engine.bytes);
    r.total_calls += c.calls;
    r.total_bytes = saturating_sum(r.total_bytes, c.bytes);
  }
  return r;
}

double share(const Reach& r) { return r.total_bytes ? double(r.bytes) / double(r.total_bytes) : 0.0; }

std::string percent(const Reach& r) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f %%", 100.0 * share(r));
  return text;
}

nlohmann::json kernel_json(const KernelSummary& k) {
  return {{"name", k.name}, {"kind", k.kind}, {"launches", k.launches}, {"decision", k.decision}};
}

}  // namespace

const char* to_string(ElevationOutcome outcome) {
  static constexpr const char* kNames[] = {"not-requested", "elevated",  "excluded",
                                           "failed-retry",  "no-device", "too-many-attributes"};  // in the enum's order
  static_assert(std::size(kNames) == kElevationOutcomeCount, "a name for every outcome");
  return entry_or(kNames, outcome, "unknown");
}

uint64_t collective_bytes(Collective kind, uint64_t count, int nranks, uint64_t element_bytes) {
  // size_elements is count times 1 or nranks: that factor, then the products, saturating so that a
  // count no buffer has (SIZE_MAX) does not wrap into a small total.
  return saturating_product(saturating_product(count, size_elements(kind, 1, nranks)), element_bytes);
}

void Counters::reset() {
#define TANDEM_RESET_COUNTER(field, object, key, unit, meaning) field.store(0, std::memory_order_relaxed);
  TANDEM_STATS_COUNTERS(TANDEM_RESET_COUNTER)
#undef TANDEM_RESET_COUNTER
  for (auto& c : calls_by_hook) c.store(0, std::memory_order_relaxed);
  for (auto& c : shaping) c.store(0, std::memory_order_relaxed);
  for (auto& c : elevation) c.store(0, std::memory_order_relaxed);
  for (auto& c : collective_routes) c.store(0, std::memory_order_relaxed);
  for (auto& c : collective_route_bytes) c.store(0, std::memory_order_relaxed);
  for (auto& c : not_routed_calls) c.store(0, std::memory_order_relaxed);
  for (auto& c : not_routed_bytes) c.store(0, std::memory_order_relaxed);
}

void fill_counters(const Counters& c, Snapshot& s) {
#define TANDEM_LOAD_COUNTER(field, object, key, unit, meaning) s.field = load(c.field);
  TANDEM_STATS_COUNTERS(TANDEM_LOAD_COUNTER)
#undef TANDEM_LOAD_COUNTER
  s.calls_by_hook.clear();
  for (int i = 0; i < kHookCount; ++i) s.calls_by_hook.emplace_back(kHookNames[i], load(c.calls_by_hook[i]));
  s.compute_shaped = load(c.shaping[static_cast<int>(ShapingOutcome::Shaped)]);
  s.collectives_elevated = load(c.elevation[static_cast<int>(ElevationOutcome::Elevated)]);
  s.skipped.clear();
  for (int i = 0; i < kShapingOutcomeCount; ++i) {
    const auto outcome = static_cast<ShapingOutcome>(i);
    if (outcome == ShapingOutcome::Shaped || outcome == ShapingOutcome::NotRequested) continue;
    if (const uint64_t n = load(c.shaping[i])) s.skipped.emplace_back(to_string(outcome), n);
  }
  s.collectives_not_elevated.clear();
  for (int i = 0; i < kElevationOutcomeCount; ++i) {
    const auto outcome = static_cast<ElevationOutcome>(i);
    if (outcome == ElevationOutcome::Elevated || outcome == ElevationOutcome::NotRequested) continue;
    if (const uint64_t n = load(c.elevation[i])) s.collectives_not_elevated.emplace_back(to_string(outcome), n);
  }
  s.collectives.clear();
  for (int k = 0; k < kCollectiveCount; ++k) {
    CollectiveSummary summary;
    summary.name = nccl_function(static_cast<Collective>(k));
    for (int o = 0; o < kRouteOutcomeCount; ++o) {
      const auto outcome = static_cast<RouteOutcome>(o);
      const RouteCount count{to_string(outcome), load(c.collective_routes[k * kRouteOutcomeCount + o]),
                             load(c.collective_route_bytes[k * kRouteOutcomeCount + o])};
      summary.calls += count.calls;
      summary.bytes = saturating_sum(summary.bytes, count.bytes);
      if (outcome == RouteOutcome::CopyEngine)
        summary.copy_engine = count;
      else if (count.calls)
        summary.nccl_routes.push_back(count);
    }
    if (summary.calls) s.collectives.push_back(std::move(summary));
  }
  s.not_routed.clear();
  for (size_t i = 0; i < kNotRoutedHooks.size(); ++i)
    if (const uint64_t calls = load(c.not_routed_calls[i]))
      s.not_routed.push_back({name_of(kNotRoutedHooks[i]), calls, load(c.not_routed_bytes[i])});
}

std::string render_text(const Snapshot& s, size_t top_n) {
  std::string out;
  out += line(s.pid, "summary: policy " + s.policy + (s.policy_valid ? "" : " (invalid: no controls)") + ", " +
                         std::to_string(s.launches) + " kernel launches seen (" +
                         std::to_string(s.collective_launches) + " nccl, " + std::to_string(s.compute_launches) +
                         " compute, " + std::to_string(s.captured) + " under graph capture)");
  out += line(s.pid, "nccl launches elevated: " + std::to_string(s.collectives_elevated) +
                         "; not elevated: " + join_reasons(s.collectives_not_elevated));
  out += line(s.pid, "compute launches shaped: " + std::to_string(s.compute_shaped) +
                         (s.compute_controls == "targeted" ? " (targeted: beside an outstanding collective)" : "") +
                         "; skipped: " + join_reasons(s.skipped));
  if (s.shaped_launch_failures || s.elevated_launch_failures || s.untracked_launches)
    out += line(s.pid, "retried unmodified after a failure: " + std::to_string(s.shaped_launch_failures) + " shaped, " +
                           std::to_string(s.elevated_launch_failures) +
                           " elevated; untracked: " + std::to_string(s.untracked_launches));
  if (s.cublas_handles_capped || s.cublaslt_descriptors_capped || s.cublas_cap_failures)
    out += line(s.pid, "SM-count target set on " + std::to_string(s.cublas_handles_capped) + " new cuBLAS handles, " +
                           std::to_string(s.cublaslt_descriptors_capped) + " cuBLASLt descriptors (" +
                           std::to_string(s.cublas_cap_failures) + " failed)");
  if (s.cublas_gemms_capped_beside || s.cublas_gemms_left_alone || s.cublaslt_descriptors_left_alone)
    out += line(s.pid, "SM-count target (targeted): " + std::to_string(s.cublas_gemms_capped_beside) +
                           " cuBLAS GEMMs capped beside an outstanding collective, " +
                           std::to_string(s.cublas_gemms_left_alone) + " left every SM; " +
                           std::to_string(s.cublaslt_descriptors_left_alone) + " cuBLASLt descriptors left uncapped");
  if (s.communicators_created || !s.collectives.empty())
    out += line(s.pid, "nccl communicators: " + std::to_string(s.communicators_created) + " created, " +
                           std::to_string(s.communicators_configured) + " configured (" +
                           (s.communicator_settings.empty() ? "no nccl-* settings" : s.communicator_settings) + "), " +
                           std::to_string(s.communicators_unconfigured) + " left unconfigured, " +
                           std::to_string(s.communicators_destroyed) + " destroyed" +
                           (s.nccl_variables.empty()
                                ? ""
                                : "; NCCL's variables win over these settings: " + join(s.nccl_variables, ", ")));
  for (const auto& c : s.collectives) {
    uint64_t nccl_bytes = 0;
    for (const auto& r : c.nccl_routes) nccl_bytes = saturating_sum(nccl_bytes, r.bytes);
    const uint64_t by_nccl = c.calls - c.copy_engine.calls;
    out += line(s.pid, c.name + ": " + std::to_string(c.calls) + " calls, " + bytes_text(c.bytes) + "; copy-engine " +
                           std::to_string(c.copy_engine.calls) + " (" + bytes_text(c.copy_engine.bytes) + "), nccl " +
                           std::to_string(by_nccl) + " (" + bytes_text(nccl_bytes) +
                           (by_nccl ? ": " + join_routes(c.nccl_routes) : "") + ")");
  }
  if (!s.not_routed.empty()) {
    std::string calls;
    for (const auto& f : s.not_routed)
      calls +=
          (calls.empty() ? "" : ", ") + f.name + " " + std::to_string(f.calls) + " calls (" + bytes_text(f.bytes) + ")";
    out += line(s.pid, "nccl calls no route takes (to NCCL as made): " + calls);
  }
  const Reach reach = reach_of(s);
  if (s.copy_engine_requested && reach.total_bytes)
    out += line(s.pid, "copy-engine reach: " + percent(reach) + " of the collective bytes (" +
                           std::to_string(reach.bytes) + " of " + std::to_string(reach.total_bytes) + " B" +
                           (reach.total_bytes == kSaturated ? " (saturated)" : "") + ", " +
                           std::to_string(reach.calls) + " of " + std::to_string(reach.total_calls) + " calls)");
  if (reach.calls || s.copy_engine_pool_bytes)
    out +=
        line(s.pid, "copy-engine route: " + std::to_string(reach.calls) + " calls (" +
                        std::to_string(s.copy_engine_captured) + " captured into graphs), " +
                        bytes_text(s.copy_engine_staged_bytes) + " staged, " + bytes_text(s.copy_engine_peer_bytes) +
                        " copied with the peers, window pool " + std::to_string(s.copy_engine_pool_bytes) + " B over " +
                        std::to_string(s.copy_engine_routes) + (s.copy_engine_routes == 1 ? " route" : " routes") +
                        " (" + std::to_string(s.copy_engine_registrations) + " registrations)");
  if (s.copy_engine_peer_copies_unavailable)
    out += line(s.pid, "copy-engine route: peer copies asked for, unavailable on " +
                           std::to_string(s.copy_engine_peer_copies_unavailable) + " of " +
                           std::to_string(s.copy_engine_routes) +
                           " routes (NCCL maps not every peer's window: ranks of other nodes, or sharing one GPU): "
                           "they stage");
  const size_t shown = std::min(top_n, s.kernels.size());
  if (shown > 0) out += line(s.pid, "top " + std::to_string(shown) + " kernels by launches:");
  for (size_t i = 0; i < shown; ++i) {
    const auto& k = s.kernels[i];
    char columns[160];
    std::snprintf(columns, sizeof columns, "%10llu  %-7s  %-46s", static_cast<unsigned long long>(k.launches),
                  k.kind.c_str(), k.decision.c_str());
    const std::string name = k.name.size() > 100 ? k.name.substr(0, 97) + "..." : k.name;
    out += line(s.pid, std::string(columns) + "  " + name);
  }
  return out;
}

std::string render_json(const Snapshot& s) {
  nlohmann::json calls = nlohmann::json::object();
  for (const auto& [hook, count] : s.calls_by_hook) calls[hook] = count;
  nlohmann::json kernels = nlohmann::json::array();
  nlohmann::json top = nlohmann::json::array();
  for (size_t i = 0; i < s.kernels.size(); ++i) {
    kernels.push_back(kernel_json(s.kernels[i]));
    if (i < 10) top.push_back(kernel_json(s.kernels[i]));
  }
  nlohmann::json collectives = nlohmann::json::object();
  for (const auto& c : s.collectives) {
    nlohmann::json nccl = nlohmann::json::object();
    for (const auto& r : c.nccl_routes) nccl[r.route] = route_json(r);
    collectives[c.name] = {{"calls", c.calls},
                           {"bytes", c.bytes},
                           {"bytes_saturated", c.bytes == kSaturated},
                           {"copy_engine", route_json(c.copy_engine)},
                           {"nccl", nccl}};
  }
  nlohmann::json not_routed = nlohmann::json::object();
  for (const auto& f : s.not_routed)
    not_routed[f.name] = {{"calls", f.calls}, {"bytes", f.bytes}, {"bytes_saturated", f.bytes == kSaturated}};
  const Reach reach = reach_of(s);
  nlohmann::json j = {
      {"schema_version", kStatsSchemaVersion},
      {"front_end", std::string(kTandemRunName)},
      {"pid", s.pid},
      {"policy", s.policy},
      {"policy_valid", s.policy_valid},
      {"compute_controls", s.compute_controls},
      {"log_level", s.log_level},
      {"calls_by_hook", calls},
      {"nccl_elevated", s.collectives_elevated},
      {"nccl_not_elevated", reasons_json(s.collectives_not_elevated)},
      {"compute_shaped", s.compute_shaped},
      {"skipped", reasons_json(s.skipped)},
      {"nccl_communicators", {{"settings", s.communicator_settings}, {"overridden_by_variables", s.nccl_variables}}},
      {"nccl_collectives", collectives},
      {"nccl_not_routed", not_routed},
      {"copy_engine_reach",
       {{"requested", s.copy_engine_requested},
        {"calls", reach.calls},
        {"bytes", reach.bytes},
        {"total_calls", reach.total_calls},
        {"total_bytes", reach.total_bytes},
        {"bytes_saturated", reach.total_bytes == kSaturated},
        {"share_of_bytes", share(reach)}}},
      {"last_nccl_footprint", s.last_collective_footprint},
      {"top_kernels", top},
      {"kernels", kernels},
  };
#define TANDEM_COUNTER_JSON(field, object, key, unit, meaning) j[object][key] = s.field;
  TANDEM_STATS_COUNTERS(TANDEM_COUNTER_JSON)
#undef TANDEM_COUNTER_JSON
  if (!s.timeline.is_null()) j["timeline"] = s.timeline;
  // Text from the environment (a policy, a kernel name) is shown escaped by the snapshot; replacing
  // any invalid UTF-8 left is the last guard: the file is always written.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace tandem::preload
