#pragma once
// The stats schema: every key of a stats document, with its unit and meaning, and which front end
// writes it. One schema for the three places tandem counts the collectives it reaches: the
// interposer's --stats document (preload/stats.cpp), the copy-engine route's counters
// (tandem/route_counters.h: the C++ struct, the C ABI, tandem._cuda's route.stats()) and
// tandem.torch's stats() (python/tandem/torch/counts.py). A document is an object whose fields are the
// record "document"; a field's value is one value, a map {name: value} or a list, each value of a
// unit or a record of its own. Rendered as python/tandem/stats_schema.json (what tandem.torch and
// scripts/reach-check.py read; tests/cpu/test_preload_stats_schema.cpp checks the file against this) and as
// docs/BENCH_JSON.md's table of `tandem run --stats`.
#include <string>
#include <string_view>
#include <vector>

namespace tandem {

// Every document carries it as "schema_version". Raised when a key changes meaning or goes away; a
// key added keeps it (a reader skips what it does not know).
inline constexpr int kStatsSchemaVersion = 2;

// The front ends that write a stats document (a bit mask); their names are each document's
// "front_end".
enum StatsWriter : unsigned {
  kTandemRun = 1u << 0,    // the interposer behind `tandem run --stats`
  kTandemTorch = 1u << 1,  // tandem.torch.stats()
  kEveryFrontEnd = kTandemRun | kTandemTorch,
};
inline constexpr std::string_view kTandemRunName = "tandem run";
inline constexpr std::string_view kTandemTorchName = "tandem.torch";

// A value's unit. Record: the value is an object, the record `StatsField::record` names.
enum class StatsUnit {
  Version,    // a schema version
  ProcessId,  // a process id
  Text,
  Flag,      // true or false
  Calls,     // calls of a function (a collective, cublasSetStream)
  Launches,  // kernel launches
  Bytes,     // B
  Count,     // things: communicators, routes, registrations, handles
  Fraction,  // 0..1
  Record,
  Object,  // an object of a schema of its own (the timeline: docs/BENCH_JSON.md)
};
inline constexpr int kStatsUnitCount = static_cast<int>(StatsUnit::Object) + 1;
// "version", "pid", "text", "boolean", "calls", "launches", "B", "count", "fraction", "record", "object".
const char* to_string(StatsUnit);
// The unit of that name; throws tandem::Error for another name.
StatsUnit stats_unit_named(std::string_view name);

enum class StatsShape {
  One,   // a value
  Map,   // {name: value}: the names are data (NCCL functions, reasons, hooks, groups)
  List,  // [value]
};

struct StatsField {
  std::string_view key;
  StatsUnit unit;
  StatsShape shape = StatsShape::One;
  std::string_view record = {};  // StatsUnit::Record: the record each value is
  std::string_view meaning = {};
  // Said of the document's own fields only: a record is written by whoever writes the field holding it.
  unsigned writers = kEveryFrontEnd;
  bool optional = false;  // written only sometimes (the timeline: under --timeline)
};

struct StatsRecord {
  std::string_view name;
  std::string_view meaning;
  std::vector<StatsField> fields;
};

// Every record, "document" first, each other record after the first field that names it.
const std::vector<StatsRecord>& stats_records();
// The record of that name, or nullptr.
const StatsRecord* find_stats_record(std::string_view name);
// The keys of `record` that `writer` writes, in the schema's order (`optional` ones included).
std::vector<std::string> stats_keys(std::string_view record, unsigned writer = kEveryFrontEnd);
// The schema as docs/BENCH_JSON.md's tables (markdown, one per record), without the marker comments.
std::string stats_schema_markdown();

}  // namespace tandem
