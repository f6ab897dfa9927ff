#pragma once
// The --json document (docs/BENCH_JSON.md, schema_version 2), written as the run goes: every row
// reaches the file as soon as it is measured, in a document marked incomplete, so a run that is
// interrupted (Ctrl-C, a lost rank, a time-out) keeps what it measured; the last write marks it
// complete. Rows are few and each takes seconds: rewriting the file costs nothing. Every write is
// atomic (tandem/safe_file.h): a reader never sees half a document.
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "report/reporter.h"

namespace tandem::bench {

// Writes `doc` to `path` atomically, as valid UTF-8, indented; throws tandem::Error on failure.
void write_results_json(const std::string& path, const nlohmann::json& doc);

class JsonReporter final : public Reporter {
 public:
  explicit JsonReporter(std::string path) : path_(std::move(path)) {}
  void report_context(const RunInfo& info) override { info_ = info; }
  // Rewrites the incomplete document; a write that fails is reported once on stderr and retried
  // with the next row, never fatal: the measurement goes on.
  void report_row(const Row& row) override;
  // The complete document, with the notes and the measured HBM bandwidth; throws if it cannot.
  void report_end(const RunResults& results) override;
  // The incomplete document on disk holds every row reported; a write that failed is tried again.
  void report_interrupted(const std::string& why) override;

 private:
  bool write_so_far();

  std::string path_;
  RunInfo info_;
  std::vector<Row> rows_;
  bool warned_ = false;
  bool last_write_failed_ = false;
};

}  // namespace tandem::bench
