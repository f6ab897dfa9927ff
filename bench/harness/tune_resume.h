#pragma once
// `tandem tune --resume FILE.json`: the cases an interrupted tune finished, read back from its --json
// (docs/BENCH_JSON.md), so that a new run skips them and tunes only the rest. Pure functions of the
// document and this run's description: CPU-tested.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/report.h"

namespace tandem::bench {

// A case the interrupted tune finished: its identity, every row it wrote (candidates, then the final
// round's naive, paper and tuned rows), and those three rows for its policy file.
struct ResumedCase {
  std::string workload, collective, dtype;
  uint64_t bytes = 0;
  nlohmann::json rows = nlohmann::json::array();
  Row naive, paper, tuned;
};

// Reads FILE and checks that it is a tandem tune JSON of schema_version 2 (complete or not). Throws
// tandem::UserError, one line naming FILE and what is wrong.
nlohmann::json read_resume_file(const std::string& path);

// The finished cases of `doc` (read_resume_file), when its run was this one's: the same GPU and
// GPU count, world size, and configuration lines (the command-shaping options: collectives, dtype,
// sizes, in place or not, balance, timing, check, workloads' shapes). Throws tandem::UserError naming
// the first mismatch. A case counts as finished when its tuned row is in the file.
std::vector<ResumedCase> resumable_cases(const nlohmann::json& doc, const RunInfo& info, const std::string& path);

// The finished case with this identity, or nullptr.
const ResumedCase* find_resumed(const std::vector<ResumedCase>& cases, const std::string& workload,
                                const std::string& collective, uint64_t bytes, const std::string& dtype);

}  // namespace tandem::bench
