#pragma once
// What a program tune's runs decide (program_tuner.h runs them): each policy's statistics over the
// finished rounds, and the candidate, if any, that beats the baseline by more than the noise. A
// candidate wins only if its median beats the baseline's by more than both spreads (max - min over
// the rounds) added: a gain inside the noise is no gain.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "program_tools/program_tuner.h"

namespace tandem::program_tools {

// What is known about one policy (or the baseline) over the rounds done.
struct PolicyStats {
  int candidate = 0;  // 0: the baseline
  std::string policy;
  std::vector<double> values;  // one per round it ran in
  double median = 0, min = 0, max = 0;
  std::string disqualified;  // why it is out of the running ("" when it is in)
  double spread() const { return max - min; }
};

// The decision over what is measured: the winner (index into `stats`, whose [0] is the baseline) or
// none, and why.
struct ProgramDecision {
  std::optional<size_t> winner;
  std::string reason;
};

// Per-policy statistics over the runs of finished rounds ([0] the baseline, then the candidates in
// the options' order). A candidate that failed any run is disqualified with that run's reason.
std::vector<PolicyStats> program_stats(const ProgramTuneOptions& options, const ProgramTuneResult& result);
// The candidate with the best median among those whose median beats the baseline's by more than the
// two spreads added; none if no candidate does.
ProgramDecision decide_program_policy(const std::vector<PolicyStats>& stats, bool higher_is_better);
// Whether value `a` is better than `b` for a metric where higher (or lower) is better.
inline bool is_better(double a, double b, bool higher_is_better) { return higher_is_better ? a > b : a < b; }

}  // namespace tandem::program_tools
