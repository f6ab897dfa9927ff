#include "report/reporter.h"

namespace tandem::bench {

Reporters& Reporters::add(std::unique_ptr<Reporter> reporter) {
  reporters_.push_back(std::move(reporter));
  return *this;
}

void Reporters::report_context(const RunInfo& info) {
  for (auto& r : reporters_) r->report_context(info);
}

void Reporters::report_progress(const std::string& line) {
  for (auto& r : reporters_) r->report_progress(line);
}

void Reporters::report_row(const Row& row) {
  for (auto& r : reporters_) r->report_row(row);
}

void Reporters::report_end(const RunResults& results) {
  for (auto& r : reporters_) r->report_end(results);
}

void Reporters::report_interrupted(const std::string& why) {
  // Every reporter gets its chance to keep what it has, whatever the others do; the run's own error,
  // which the caller rethrows, is what the user must see, not a reporter's failure behind it.
  for (auto& r : reporters_) {
    try {
      r->report_interrupted(why);
    } catch (...) {
    }
  }
}

}  // namespace tandem::bench
