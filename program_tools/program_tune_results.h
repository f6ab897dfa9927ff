#pragma once
// What a program tune's runs come to, in every form its outputs take: the '#' header's context, a
// progress line per run, the policy file's lines and policy, the --json document, and the end's
// table and decision for the reporter (program_tune_report.h). The command only chooses where each
// goes and writes the files (app/cmd_tune_program.cpp).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "program_tools/program_tune_decision.h"
#include "program_tools/program_tune_report.h"
#include "program_tools/program_tuner.h"
#include "report/report.h"
#include "tandem/policy.h"

namespace tandem::program_tools {

// How a run is measured, for the header and the policy file: the --metric, or the timeline objective.
std::string measure_text(const ProgramTuneOptions& options);

// The header's configuration, about the run `info` describes.
ProgramTuneContext tune_context(const bench::RunInfo& info, const ProgramTuneOptions& options);

// The progress line of `run`, just ended: its value or why it is disqualified, the best so far over
// the finished rounds, and the time left at the pace so far (`elapsed_s` since the first run began).
std::string run_progress_line(const ProgramTuneOptions& options, const ProgramRun& run, const ProgramTuneResult& result,
                              double elapsed_s);

// The policy the file holds: the winner, else `concurrent` (tandem run then applies no control).
OverlapPolicy chosen_policy(const std::vector<PolicyStats>& stats, const ProgramDecision& decision);
// What the policy file says about the result (its `about` lines): the program, how it was measured,
// the baseline, the decision; an unfinished search says so.
std::vector<std::string> policy_file_lines(const ProgramTuneOptions& options, const ProgramTuneResult& result,
                                           const std::vector<PolicyStats>& stats, const ProgramDecision& decision,
                                           bool finished);

// The results table's lines (program_tune_report.h): the baseline, then the candidates best
// first, the disqualified last.
std::vector<ProgramPolicyLine> program_table(const std::vector<PolicyStats>& stats, const ProgramDecision& decision,
                                             const ProgramMetric& metric);

// The runs and stats as JSON: the "policies", "runs" and "decision" members of the --json document.
nlohmann::json program_tune_json(const ProgramTuneOptions& options, const ProgramTuneResult& result,
                                 const std::vector<PolicyStats>& stats, const ProgramDecision& decision);
// The whole --json document (docs/BENCH_JSON.md, "tune-program"): the run's description, whether it
// is `complete`, the policy file's path, then program_tune_json's members.
nlohmann::json program_tune_document(const bench::RunInfo& info, const std::string& policy_file,
                                     const ProgramTuneOptions& options, const ProgramTuneResult& result,
                                     const std::vector<PolicyStats>& stats, const ProgramDecision& decision,
                                     bool complete);

// The end's report: the table, the decision and the counts. The policy file written and the policy in
// it are the caller's to add once the file is written.
ProgramTuneEnd tune_end(const ProgramTuneOptions& options, const ProgramTuneResult& result,
                        const std::vector<PolicyStats>& stats, const ProgramDecision& decision);

}  // namespace tandem::program_tools
