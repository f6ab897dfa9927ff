#include "report/json_reporter.h"

#include <cstdio>
#include <utility>

#include "tandem/printable.h"
#include "tandem/safe_file.h"

namespace tandem::bench {

nlohmann::json results_json(const RunInfo& info, const std::vector<Row>& rows, const std::vector<std::string>& notes,
                            bool complete, bool scenarios) {
  nlohmann::json doc = to_json(info, rows, notes, complete);
  if (scenarios) add_scenario_json_fields(doc);
  return doc;
}

void add_scenario_json_fields(nlohmann::json& doc) {
  if (!doc.contains("rows")) return;
  for (auto& row : doc["rows"]) {
    const double overlap = row.value("t_overlap_ms", 0.0), bound = row.value("t_bound_ms", 0.0);
    row["bound_fraction"] = overlap > 0 ? nlohmann::json(bound / overlap) : nlohmann::json(nullptr);
  }
}

void write_results_json(const std::string& path, const nlohmann::json& doc) {
  write_file_atomically(path, json_text(doc, 2) + "\n");
}

bool JsonReporter::write_so_far() {
  const std::string why =
      try_write_file_atomically(path_, json_text(results_json(info_, rows_, {}, false, scenarios_), 2) + "\n");
  last_write_failed_ = !why.empty();
  if (last_write_failed_ && !std::exchange(warned_, true))
    std::fprintf(stderr, "tandem %s: warning: %s (retried after every row)\n", info_.tool.c_str(),
                 printable(why, 1000).c_str());
  return !last_write_failed_;
}

void JsonReporter::report_row(const Row& row) {
  rows_.push_back(row);
  write_so_far();
}

void JsonReporter::report_end(const RunResults& results) {
  RunInfo info = info_;
  info.hbm_bandwidth_gbps = results.hbm_bandwidth_gbps;
  write_results_json(path_, results_json(info, results.rows, results.notes, true, scenarios_));
}

void JsonReporter::report_interrupted(const std::string&) {
  if (last_write_failed_) write_so_far();
}

}  // namespace tandem::bench
