#pragma once
// What `tandem tune` prints after its search, in the '#' table of report.h: per tuned case its
// candidates fastest first and the policy file written; per case kept from --resume one line; then
// the summary (each case's naive, paper and tuned rows) and the footer.
#include <string>
#include <vector>

#include "report/report.h"

namespace tandem::bench {

// A tuned case: the candidates its search measured (at most `show` listed, fastest first), its
// tuned row and the policy file it was written to.
std::string tuned_case_text(const std::vector<Row>& candidates, const Row& tuned, const std::string& policy_path,
                            int show);
// A case tuned by an earlier run (--resume `resume_path`) and the policy it found.
std::string resumed_case_text(const std::string& workload, const std::string& collective, uint64_t bytes,
                              const std::string& policy, const std::string& resume_path);
// The summary table of the final rounds (`final_rows`: naive, paper, tuned per case), the search's
// duration, and the footer over every row of the run (`all_rows`) and its notes.
std::string tune_summary_text(const std::vector<Row>& final_rows, double seconds, const std::vector<Row>& all_rows,
                              const std::vector<std::string>& notes);

}  // namespace tandem::bench
