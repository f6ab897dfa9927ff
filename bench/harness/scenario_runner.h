#pragma once
// `tandem bench --workload dp-backward,...`: training scenarios (harness/scenario.h) measured under
// every policy, with the same rows, header and JSON as the microbenchmarks (the header's lines:
// harness/run_description.h).
//
// Per scenario: t_seq (everything on one stream), t_compute (collectives skipped), t_comm (only the
// collectives, in order), t_chain (the dependency chain with every operation at its time alone: at
// least max(t_compute, t_comm)), t_bound = max(t_chain, HBM bytes / bandwidth), then t_overlap under
// each policy, results checked against the reference under each.
#include <memory>
#include <string>
#include <vector>

#include "harness/runner.h"
#include "harness/scenario.h"

namespace tandem::bench {

bool is_scenario(const std::string& name);
const std::vector<std::string>& scenario_names();
// Builds a scenario for `nranks` ranks without touching a GPU; throws tandem::Error naming the
// option when the scenario cannot run with these options on that many ranks.
std::unique_ptr<Scenario> make_scenario(const std::string& name, const BenchOptions& options, int nranks);
// make_scenario for every requested scenario: bad sizes fail before any GPU work.
void validate_scenarios(const BenchOptions& options, int nranks);
// for_each_case's training scenarios: sets up every scenario in options.workloads on ranks
// 0..nranks-1 (threads, or this process's rank), measures its footprints and default-configuration
// baselines, and calls `body` once per scenario on every rank. CaseId.collective is the scenario's collectives
// ("all-gather+reduce-scatter") and CaseId.bytes its collective bytes per iteration. Returns the collecting rank's HBM
// bandwidth; `notes` receives setup notes (rank 0's). Throws after every local rank has stopped.
double for_each_scenario(const BenchOptions& options, int nranks, const CaseBody& body, std::vector<std::string>* notes,
                         const ProgressSink& progress);

}  // namespace tandem::bench
