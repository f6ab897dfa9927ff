#pragma once
// The stats schema (tandem/stats_schema.h) as JSON: python/tandem/stats_schema.json, which
// tandem.torch and scripts/reach-check.py read (tests/cpu/test_preload_stats_schema.cpp checks the file is
// this). Header-only: tandem::core carries no JSON library.
#include <nlohmann/json.hpp>

#include "tandem/stats_schema.h"

namespace tandem {

inline nlohmann::json stats_schema_json() {
  const auto writers = [](unsigned mask) {
    nlohmann::json names = nlohmann::json::array();
    if (mask & kTandemRun) names.push_back(std::string(kTandemRunName));
    if (mask & kTandemTorch) names.push_back(std::string(kTandemTorchName));
    return names;
  };
  static constexpr const char* kShapes[] = {"one", "map", "list"};  // StatsShape's order
  nlohmann::json records = nlohmann::json::object();
  for (const StatsRecord& r : stats_records()) {
    nlohmann::json fields = nlohmann::json::array();
    for (const StatsField& f : r.fields) {
      nlohmann::json field = {{"key", std::string(f.key)},
                              {"unit", to_string(f.unit)},
                              {"shape", kShapes[static_cast<int>(f.shape)]},
                              {"meaning", std::string(f.meaning)}};
      // Who writes a field is said of the document's own fields (a record: whoever writes its holder).
      if (r.name == "document") {
        field["written_by"] = writers(f.writers);
        field["optional"] = f.optional;
      }
      if (f.unit == StatsUnit::Record) field["record"] = std::string(f.record);
      fields.push_back(field);
    }
    records[std::string(r.name)] = {{"meaning", std::string(r.meaning)}, {"fields", fields}};
  }
  nlohmann::json units = nlohmann::json::array();
  for (int i = 0; i < kStatsUnitCount; ++i) units.push_back(to_string(static_cast<StatsUnit>(i)));
  return {{"schema_version", kStatsSchemaVersion},
          {"front_ends", writers(kEveryFrontEnd)},
          {"units", units},
          {"records", records}};
}

}  // namespace tandem
