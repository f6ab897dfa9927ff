#pragma once
// What `tandem tune` prints after its search, in the '#' table of report.h.
#include <string>
#include <vector>

#include "report/report.h"

namespace tandem::bench {

// A tuned case: at most `show` of its candidates, fastest first, and the policy file written.
std::string tuned_case_text(const std::vector<Row>& candidates, const Row& tuned, const std::string& policy_path,
                            int show);
// A case tuned by an earlier run (--resume `resume_path`) and the policy it found.
std::string resumed_case_text(const std::string& workload, const std::string& collective, uint64_t bytes,
                              const std::string& policy, const std::string& resume_path);
// The final rounds' rows (naive, paper, tuned per case), the search's duration, and the footer
// over every row of the run and its notes.
std::string tune_summary_text(const std::vector<Row>& final_rows, double seconds, const std::vector<Row>& all_rows,
                              const std::vector<std::string>& notes);

}  // namespace tandem::bench
