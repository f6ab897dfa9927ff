#include "report/tune_report.h"

#include <algorithm>

#include "tandem/printable.h"

namespace tandem::bench {

std::string tuned_case_text(const std::vector<Row>& candidates, const Row& tuned, const std::string& policy_path,
                            int show) {
  std::vector<const Row*> ranked;
  for (const Row& r : candidates) ranked.push_back(&r);
  std::sort(ranked.begin(), ranked.end(), [](const Row* a, const Row* b) { return a->t_overlap_ms < b->t_overlap_ms; });
  std::string out = "#\n# " + tuned.workload + " x " + tuned.collective + " " + size_text(tuned.bytes) + ": " +
                    std::to_string(candidates.size()) + " policies measured; fastest first\n" + column_header_text();
  for (size_t i = 0; i < ranked.size() && i < static_cast<size_t>(std::max(show, 0)); ++i) out += row_text(*ranked[i]);
  return out + "# wrote " + policy_path + ": " + tuned.policy + "\n";
}

std::string resumed_case_text(const std::string& workload, const std::string& collective, uint64_t bytes,
                              const std::string& policy, const std::string& resume_path) {
  return "#\n# " + workload + " x " + collective + " " + size_text(bytes) + ": tuned before (--resume " +
         printable(resume_path, 200) + "): " + policy + "\n";
}

std::string tune_summary_text(const std::vector<Row>& final_rows, double seconds, const std::vector<Row>& all_rows,
                              const std::vector<std::string>& notes) {
  std::string out = "#\n# summary: naive (concurrent), paper (best shape:*+priority, else priority), tuned; " +
                    format("%.1f s", seconds) + "\n" + column_header_text();
  for (const Row& r : final_rows) out += row_text(r);
  return out + footer_text(all_rows, notes);
}

}  // namespace tandem::bench
