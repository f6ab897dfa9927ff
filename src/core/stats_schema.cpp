// The stats schema's records (tandem/stats_schema.h says who reads them).
#include "tandem/stats_schema.h"

#include <algorithm>
#include <iterator>

#include "tandem/enum_table.h"
#include "tandem/error.h"
#include "tandem/stats_counters.h"
#include "tandem/text.h"

namespace tandem {
namespace {

using U = StatsUnit;
using S = StatsShape;

constexpr const char* kUnitNames[] = {"version", "pid",   "text",     "boolean", "calls", "launches",
                                      "B",       "count", "fraction", "record",  "object"};  // in the enum's order
static_assert(covers(kUnitNames, StatsUnit::Object), "one name per StatsUnit");

StatsField record_field(std::string_view key, std::string_view record, std::string_view meaning,
                        unsigned writers = kEveryFrontEnd, S shape = S::One) {
  return {key, U::Record, shape, record, meaning, writers};
}

// The fields of the interposer's counters (tandem/stats_counters.h) that go into `object`.
std::vector<StatsField> counter_fields(std::string_view object) {
  std::vector<StatsField> fields;
#define TANDEM_SCHEMA_COUNTER(field, counter_object, key, unit, meaning) \
  if (counter_object == object) fields.push_back({key, stats_unit_named(unit), S::One, {}, meaning});
  TANDEM_STATS_COUNTERS(TANDEM_SCHEMA_COUNTER)
#undef TANDEM_SCHEMA_COUNTER
  return fields;
}

// The copy-engine route's own counters (tandem/route_counters.h).
std::vector<StatsField> route_fields() {
  std::vector<StatsField> fields;
#define TANDEM_SCHEMA_ROUTE_COUNTER(name, unit, meaning) \
  fields.push_back({#name, stats_unit_named(unit), S::One, {}, meaning});
  TANDEM_ROUTE_COUNTERS(TANDEM_SCHEMA_ROUTE_COUNTER)
#undef TANDEM_SCHEMA_ROUTE_COUNTER
  return fields;
}

std::vector<StatsField> with(std::vector<StatsField> fields, std::vector<StatsField> more) {
  fields.insert(fields.end(), more.begin(), more.end());
  return fields;
}

std::vector<StatsRecord> make_records() {
  constexpr unsigned run = kTandemRun;
  constexpr unsigned torch = kTandemTorch;
  std::vector<StatsRecord> records = {
      {"document",
       "one process's statistics (`tandem run --stats`: each process the interposer reports for; "
       "tandem.torch.stats(): the process's tandem.torch)",
       {
           {"schema_version", U::Version, S::One, {}, "this schema's version (kStatsSchemaVersion)"},
           {"front_end", U::Text, S::One, {}, "who wrote the document: `tandem run` or `tandem.torch`"},
           {"pid", U::ProcessId, S::One, {}, "the process", run},
           {"policy",
            U::Text,
            S::One,
            {},
            "TANDEM_POLICY as given, escaped as tandem's messages escape text (control characters and bytes "
            "that are not UTF-8 as \\xHH, at most 2000 characters)",
            run},
           {"policy_valid", U::Flag, S::One, {}, "false when the policy did not parse (no controls were applied)", run},
           {"compute_controls",
            U::Text,
            S::One,
            {},
            "how shape and sm-target were applied: `targeted` (only beside an outstanding collective, the "
            "default), `always` (compute-always), empty (the policy sets neither)",
            run},
           {"log_level", U::Text, S::One, {}, "TANDEM_LOG_LEVEL as applied", run},
           {"calls_by_hook",
            U::Calls,
            S::Map,
            {},
            "calls per hooked function (cuLaunchKernel_ptsz, ncclAllReduce, ...)",
            run},
           {"nccl_elevated", U::Launches, S::One, {}, "NCCL launches given the device's greatest priority", run},
           {"nccl_not_elevated", U::Launches, S::Map, {}, "the other NCCL launches, by reason", run},
           {"compute_shaped", U::Launches, S::One, {}, "compute launches padded", run},
           {"skipped", U::Launches, S::Map, {}, "the other compute launches, by reason", run},
           record_field("launches", "launches", "the kernel launches the hooks saw", run),
           record_field("failures", "failures", "modified launches retried, and launches left alone", run),
           record_field("cublas", "cublas", "what sm-target did to cuBLAS and cuBLASLt", run),
           record_field("nccl_communicators", "nccl_communicators",
                        "the communicators the program created, and the policy's settings for them", run),
           record_field("nccl_collectives", "collective",
                        "one member per collective the front end saw called: `tandem run` by NCCL function "
                        "(ncclAllReduce, ncclReduceScatter, ncclAllGather, ncclAlltoAll, ncclBroadcast), "
                        "tandem.torch by its hook (ddp_all_reduce, ddp_broadcast, fsdp_all_gather, "
                        "fsdp_reduce_scatter)",
                        kEveryFrontEnd, S::Map),
           record_field("nccl_not_routed", "not_routed",
                        "one member per NCCL function the route never takes (ncclReduce, ncclSend, ncclRecv) that "
                        "the program called; empty when none was",
                        run, S::Map),
           record_field("copy_engine_reach", "reach", "the share of the collectives the copy-engine route took"),
           record_field("copy_engine_route", "copy_engine_route", "what the copy-engine routes cost, summed"),
           record_field("routes", "route", "each open route's own counters, by process group name", torch, S::Map),
           record_field("window_pool", "window_pool", "window memory lent as tensors (FSDP2's all-gather outputs)",
                        torch),
           {"last_nccl_footprint",
            U::Text,
            S::One,
            {},
            "the last NCCL launch's CTA footprint (threads, registers, shared memory, cluster), empty before one",
            run},
           record_field("top_kernels", "kernel", "the 10 most launched kernels", run, S::List),
           record_field("kernels", "kernel", "every kernel, by launches, descending", run, S::List),
           {"timeline",
            U::Object,
            S::One,
            {},
            "only under --timeline (TANDEM_TIMELINE): the process's timeline, an object of its own schema "
            "(docs/BENCH_JSON.md, `timeline`)",
            run,
            true},
       }},
      {"launches", "kernel launches", counter_fields("launches")},
      {"failures", "what was retried or left alone", counter_fields("failures")},
      {"cublas", "sm-target on cuBLAS", counter_fields("cublas")},
      {"nccl_communicators", "the program's NCCL communicators",
       with(counter_fields("nccl_communicators"),
            {{"settings", U::Text, S::One, {}, "the policy's nccl-* settings as policy text, empty for none"},
             {"overridden_by_variables",
              U::Text,
              S::List,
              {},
              "the NCCL variables the user set that override those settings (NCCL_MAX_CTAS=16): NCCL lets its "
              "variables win"}})},
      {"collective",
       "one collective's calls: bytes as nccl-tests counts a call (the larger of its buffers), saturating at "
       "18446744073709551615 rather than wrapping",
       {{"calls", U::Calls, S::One, {}, "calls that ran"},
        {"bytes", U::Bytes, S::One, {}, "their bytes"},
        {"bytes_saturated", U::Flag, S::One, {}, "bytes reached the saturation value"},
        record_field("copy_engine", "counts", "the calls the copy-engine route took"),
        record_field("nccl", "counts",
                     "the calls NCCL ran, by the reason the route did not take them (tandem::RouteOutcome's tokens, "
                     "docs/RUN.md's summary; tandem.torch adds its own: `a cpu tensor`, `reduction ...`)",
                     kEveryFrontEnd, S::Map)}},
      {"counts",
       "calls and their bytes",
       {{"calls", U::Calls, S::One, {}, "calls"}, {"bytes", U::Bytes, S::One, {}, "their bytes"}}},
      {"not_routed",
       "one NCCL function's calls",
       {{"calls", U::Calls, S::One, {}, "calls"},
        {"bytes", U::Bytes, S::One, {}, "count x element size, saturating as a collective's"},
        {"bytes_saturated", U::Flag, S::One, {}, "bytes reached the saturation value"}}},
      {"reach",
       "what share of the collectives the copy-engine route took",
       {{"requested",
         U::Flag,
         S::One,
         {},
         "copy-engine was asked for (`tandem run`: the policy has it; tandem.torch: a hook or collective of a "
         "copy-engine policy ran)"},
        {"calls", U::Calls, S::One, {}, "calls the route took"},
        {"bytes", U::Bytes, S::One, {}, "their bytes"},
        {"total_calls", U::Calls, S::One, {}, "every call of nccl_collectives"},
        {"total_bytes", U::Bytes, S::One, {}, "their bytes"},
        {"bytes_saturated", U::Flag, S::One, {}, "total_bytes reached the saturation value"},
        {"share_of_bytes", U::Fraction, S::One, {}, "bytes / total_bytes, 0 without collectives"}}},
      {"copy_engine_route", "the copy-engine routes, summed", counter_fields("copy_engine_route")},
      {"route", "one copy-engine route's counters (tandem::CopyEngineRouteStats)", route_fields()},
      {"window_pool",
       "window buffers of a route lent as tensors",
       {{"buffers", U::Count, S::One, {}, "window buffers made"},
        {"lent", U::Count, S::One, {}, "tensors lent from them"}}},
      {"kernel",
       "one kernel",
       {{"name", U::Text, S::One, {}, "demangled where possible"},
        {"kind", U::Text, S::One, {}, "`nccl` or `compute`"},
        {"launches", U::Launches, S::One, {}, "its launches"},
        {"decision",
         U::Text,
         S::One,
         {},
         "the last decision on it: `shaped 8->2 blocks/SM (...)`, `elevated`, `skipped: cooperative`, ..."}}},
  };
  return records;
}

std::string writers_text(unsigned writers) {
  std::vector<std::string> names;
  if (writers & kTandemRun) names.emplace_back(kTandemRunName);
  if (writers & kTandemTorch) names.emplace_back(kTandemTorchName);
  return join(names, ", ");
}

std::string type_text(const StatsField& f) {
  const std::string value = f.unit == U::Record ? "`" + std::string(f.record) + "`" : to_string(f.unit);
  switch (f.shape) {
    case S::Map:
      return "{name: " + value + "}";
    case S::List:
      return "[" + value + "]";
    case S::One:
      break;
  }
  return value;
}

}  // namespace

const char* to_string(StatsUnit unit) { return table_entry(kUnitNames, unit); }

StatsUnit stats_unit_named(std::string_view name) {
  const auto* end = std::end(kUnitNames);
  const auto* found = std::find(std::begin(kUnitNames), end, name);
  TANDEM_REQUIRE(found != end, "'" + std::string(name) + "' is no stats unit");
  return static_cast<StatsUnit>(found - std::begin(kUnitNames));
}

const std::vector<StatsRecord>& stats_records() {
  // Built once and never destroyed: the interposer may read it from its exit report, after this file's
  // statics went.
  static const auto* const kRecords = new std::vector<StatsRecord>(make_records());
  return *kRecords;
}

const StatsRecord* find_stats_record(std::string_view name) {
  const std::vector<StatsRecord>& records = stats_records();
  const auto it = std::find_if(records.begin(), records.end(), [&](const StatsRecord& r) { return r.name == name; });
  return it == records.end() ? nullptr : &*it;
}

std::vector<std::string> stats_keys(std::string_view record, unsigned writer) {
  std::vector<std::string> keys;
  if (const StatsRecord* r = find_stats_record(record))
    for (const StatsField& f : r->fields)
      if (f.writers & writer) keys.emplace_back(f.key);
  return keys;
}

std::string stats_schema_markdown() {
  // Who writes a field is said of the document's own fields: a record is written by whoever writes the
  // field that holds it.
  std::string out;
  for (const StatsRecord& r : stats_records()) {
    const bool document = r.name == "document";
    out += "`" + std::string(r.name) + "`: " + std::string(r.meaning) + "\n\n";
    out += document ? "| key | value | written by | meaning |\n|---|---|---|---|\n"
                    : "| key | value | meaning |\n|---|---|---|\n";
    for (const StatsField& f : r.fields)
      out += "| `" + std::string(f.key) + "` | " + type_text(f) + " | " +
             (document ? writers_text(f.writers) + (f.optional ? " (sometimes)" : "") + " | " : std::string()) +
             std::string(f.meaning) + " |\n";
    out += "\n";
  }
  return out;
}

}  // namespace tandem
