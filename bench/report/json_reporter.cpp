#include "report/json_reporter.h"

#include <cstdio>
#include <utility>

#include "tandem/printable.h"
#include "tandem/safe_file.h"

namespace tandem::bench {

void write_results_json(const std::string& path, const nlohmann::json& doc) {
  write_file_atomically(path, json_text(doc, 2) + "\n");
}

bool JsonReporter::write_so_far() {
  const std::string why = try_write_file_atomically(path_, json_text(to_json(info_, rows_, {}, false), 2) + "\n");
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
  write_results_json(path_, to_json(info, results.rows, results.notes, true, results.residency_plans));
}

void JsonReporter::report_interrupted(const std::string&) {
  if (last_write_failed_) write_so_far();
}

}  // namespace tandem::bench
