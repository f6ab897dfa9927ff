// The stats schema (tandem/stats_schema.h) against what writes and reads stats: the interposer's
// --stats document has exactly the schema's keys, record by record; the route's counters are the
// same list in the C++ struct, the C ABI and the schema's "route" record; and
// python/tandem/stats_schema.json, which tandem.torch and scripts/reach-check.py read, is the schema.
// The Python side (tandem.torch.stats()) is checked against the same file in
// tests/python/test_torch_stats.py.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "preload/route/tandem_nccl_route.h"
#include "preload/stats.h"
#include "tandem/copy_engine_route.h"
#include "tandem/stats_schema.h"
#include "tandem/stats_schema_json.h"

namespace {

using json = nlohmann::json;
using namespace tandem;

std::set<std::string> keys_of(const json& object) {
  std::set<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.insert(key);
  return keys;
}

std::set<std::string> schema_keys(const char* record, unsigned writer = kEveryFrontEnd, bool with_optional = true) {
  std::set<std::string> keys;
  for (const StatsField& f : find_stats_record(record)->fields)
    if ((f.writers & writer) && (with_optional || !f.optional)) keys.emplace(f.key);
  return keys;
}

TEST(StatsSchema, EveryRecordNamedIsDefinedAndEveryRecordIsReached) {
  std::set<std::string> named = {"document"};
  for (const StatsRecord& r : stats_records()) {
    std::set<std::string> keys;
    for (const StatsField& f : r.fields) {
      EXPECT_TRUE(keys.insert(std::string(f.key)).second) << r.name << "." << f.key << " twice";
      EXPECT_FALSE(f.meaning.empty()) << r.name << "." << f.key;
      EXPECT_NE(f.writers, 0u) << r.name << "." << f.key;
      if (f.unit == StatsUnit::Record) {
        EXPECT_NE(find_stats_record(f.record), nullptr) << r.name << "." << f.key << " names " << f.record;
        named.insert(std::string(f.record));
      } else {
        EXPECT_TRUE(f.record.empty()) << r.name << "." << f.key;
      }
    }
  }
  for (const StatsRecord& r : stats_records()) EXPECT_EQ(named.count(std::string(r.name)), 1u) << r.name;
  EXPECT_EQ(stats_records().front().name, "document");
  EXPECT_EQ(stats_unit_named("B"), StatsUnit::Bytes);
  EXPECT_THROW(stats_unit_named("bytes"), Error);
}

// The route's counters: one list for the C++ struct, the C ABI and the schema, with units.
TEST(StatsSchema, TheRoutesCountersAreOneList) {
  const std::vector<std::string> route = stats_keys("route");
  EXPECT_EQ(route,
            (std::vector<std::string>{"calls", "captured", "staged_bytes", "peer_bytes", "peer_copies_unavailable",
                                      "pool_bytes", "buffer_bytes", "registrations"}));
  static_assert(sizeof(tandem_nccl_route_stats) == 8 * sizeof(int64_t), "the C ABI's counters are the list's");
  static_assert(sizeof(CopyEngineRouteStats) == 8 * sizeof(int64_t), "the struct's counters are the list's");
  // Each field of the C ABI, set through the list, reads back under the schema's name in the same place.
  tandem_nccl_route_stats abi{};
  CopyEngineRouteStats ours;
  int64_t value = 1;
  std::vector<std::string> names;
#define TANDEM_TEST_ROUTE_COUNTER(name, unit, meaning) \
  abi.name = value;                                    \
  ours.name = value++;                                 \
  names.push_back(#name);
  TANDEM_ROUTE_COUNTERS(TANDEM_TEST_ROUTE_COUNTER)
#undef TANDEM_TEST_ROUTE_COUNTER
  EXPECT_EQ(names, route);
  EXPECT_EQ(abi.calls, 1);
  EXPECT_EQ(abi.registrations, 8);
  EXPECT_EQ(ours.staged_bytes, 3);
  EXPECT_EQ(ours.peer_bytes, 4);
  EXPECT_EQ(abi.peer_copies_unavailable, 5);
  EXPECT_EQ(ours.buffer_bytes, 7);
  const StatsRecord& record = *find_stats_record("route");
  EXPECT_EQ(record.fields[2].unit, StatsUnit::Bytes);  // staged_bytes
  EXPECT_EQ(record.fields[3].unit, StatsUnit::Bytes);  // peer_bytes
  EXPECT_EQ(record.fields[1].unit, StatsUnit::Calls);  // captured
  EXPECT_EQ(record.fields[4].unit, StatsUnit::Count);  // peer_copies_unavailable
  EXPECT_EQ(record.fields[6].unit, StatsUnit::Bytes);  // buffer_bytes
  EXPECT_EQ(record.fields[7].unit, StatsUnit::Count);  // registrations
  // The interposer's totals: the routes made, then every route counter summed.
  std::vector<std::string> totals = {"routes"};
  totals.insert(totals.end(), route.begin(), route.end());
  EXPECT_EQ(stats_keys("copy_engine_route"), totals);
}

preload::Snapshot full_snapshot() {
  preload::Snapshot s;
  s.pid = 7;
  s.policy = "copy-engine";
  s.calls_by_hook = {{"ncclAllReduce", 2}};
  s.collectives_not_elevated = {{"excluded", 1}};
  s.skipped = {{"cooperative", 1}};
  preload::CollectiveSummary all_reduce;
  all_reduce.name = "ncclAllReduce";
  all_reduce.calls = 2;
  all_reduce.bytes = 64;
  all_reduce.copy_engine = {"copy-engine", 1, 32};
  all_reduce.nccl_routes = {{"op-not-supported", 1, 32}};
  s.collectives = {all_reduce};
  s.not_routed = {{"ncclSend", 1, 8}};
  s.kernels = {{"k", "compute", 1, "left alone"}};
  return s;
}

// Every key the interposer writes is the schema's and every key of the schema for `tandem run` is
// written, in the document and in each record.
TEST(StatsSchema, TheInterposersDocumentHasTheSchemasKeys) {
  preload::Snapshot s = full_snapshot();
  json doc = json::parse(preload::render_json(s));
  EXPECT_EQ(keys_of(doc), schema_keys("document", kTandemRun, false));
  EXPECT_EQ(doc["schema_version"], kStatsSchemaVersion);
  EXPECT_EQ(doc["front_end"], std::string(kTandemRunName));
  for (const char* record : {"launches", "failures", "cublas", "nccl_communicators", "copy_engine_route"})
    EXPECT_EQ(keys_of(doc[record]), schema_keys(record)) << record;
  EXPECT_EQ(keys_of(doc["copy_engine_reach"]), schema_keys("reach"));
  const json& collective = doc["nccl_collectives"]["ncclAllReduce"];
  EXPECT_EQ(keys_of(collective), schema_keys("collective"));
  EXPECT_EQ(keys_of(collective["copy_engine"]), schema_keys("counts"));
  EXPECT_EQ(keys_of(collective["nccl"]["op-not-supported"]), schema_keys("counts"));
  EXPECT_EQ(keys_of(doc["nccl_not_routed"]["ncclSend"]), schema_keys("not_routed"));
  EXPECT_EQ(keys_of(doc["kernels"][0]), schema_keys("kernel"));
  EXPECT_EQ(keys_of(doc["top_kernels"][0]), schema_keys("kernel"));
  // The optional timeline, when there is one.
  s.timeline = json{{"state", "recorded"}};
  doc = json::parse(preload::render_json(s));
  EXPECT_EQ(keys_of(doc), schema_keys("document", kTandemRun, true));
}

// The units of the values a reader sums: calls and bytes never change places.
TEST(StatsSchema, CountsAreCallsAndBytes) {
  for (const char* record : {"collective", "counts", "not_routed"}) {
    const StatsRecord& r = *find_stats_record(record);
    EXPECT_EQ(r.fields[0].key, "calls") << record;
    EXPECT_EQ(r.fields[0].unit, StatsUnit::Calls) << record;
    EXPECT_EQ(r.fields[1].key, "bytes") << record;
    EXPECT_EQ(r.fields[1].unit, StatsUnit::Bytes) << record;
  }
  const StatsRecord& reach = *find_stats_record("reach");
  EXPECT_EQ(reach.fields.back().key, "share_of_bytes");
  EXPECT_EQ(reach.fields.back().unit, StatsUnit::Fraction);
  // What only tandem.torch writes, and what only `tandem run` writes.
  EXPECT_EQ(schema_keys("document", kTandemTorch),
            (std::set<std::string>{"schema_version", "front_end", "nccl_collectives", "copy_engine_reach",
                                   "copy_engine_route", "routes", "window_pool"}));
  EXPECT_EQ(schema_keys("document", kTandemRun).count("routes"), 0u);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The file the Python side reads is this schema; on a change, the test prints the file to write.
TEST(StatsSchema, ThePythonPackagesFileIsTheSchema) {
  const std::string path = std::string(TANDEM_FIXTURE_DIR) + "/../../python/tandem/stats_schema.json";
  const std::string expected = stats_schema_json().dump(1) + "\n";
  EXPECT_EQ(read_file(path), expected) << "python/tandem/stats_schema.json differs from src/core/stats_schema.cpp; "
                                          "write this into it:\n"
                                       << expected;
}

// docs/BENCH_JSON.md's tables of the stats documents are the schema's.
TEST(StatsSchema, TheDocsTablesAreTheSchema) {
  const std::string doc = read_file(std::string(TANDEM_FIXTURE_DIR) + "/../../docs/BENCH_JSON.md");
  const std::string begin = "<!-- stats-schema:begin -->\n", end = "<!-- stats-schema:end -->";
  const std::string expected = stats_schema_markdown();
  const size_t from = doc.find(begin), to = doc.find(end);
  ASSERT_NE(from, std::string::npos) << "docs/BENCH_JSON.md lacks the markers; the block:\n"
                                     << begin << expected << end;
  ASSERT_NE(to, std::string::npos);
  EXPECT_EQ(doc.substr(from + begin.size(), to - from - begin.size()), expected)
      << "docs/BENCH_JSON.md's stats tables differ from src/core/stats_schema.cpp; the block:\n"
      << begin << expected << end;
}

}  // namespace
