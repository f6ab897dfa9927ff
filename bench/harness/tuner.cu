#include <algorithm>
#include <chrono>
#include <map>

#include "harness/tune_progress.h"
#include "harness/tuner.h"
#include "tandem/error.h"
#include "tandem/nvtx.h"

namespace tandem::bench {

namespace {

// The policies measured for one case, keyed by their canonical text so none is measured twice.
class Search {
 public:
  Search(PolicyTrials& runner, const BenchOptions& options, const CaseId& id, const BestSoFarSink& on_best,
         const TuneStepSink& on_step)
      : runner_(runner), options_(options), id_(id), on_best_(on_best), on_step_(on_step) {}

  // Measures `policy` unless already measured or unable to apply; returns its row or nullptr.
  const Row* measure(const OverlapPolicy& policy) {
    const std::string key = to_string(policy);
    if (auto it = index_.find(key); it != index_.end()) return &rows_[it->second];
    if (skipped_.count(key)) return nullptr;
    Row row = blank_row(options_, id_);
    std::string why;
    if (!runner_.run_policy(policy, row, why)) {
      skipped_[key] = why;
      return nullptr;
    }
    index_[key] = rows_.size();
    rows_.push_back(row);
    if (on_best_ && &best_row() == &rows_.back()) on_best_(rows_.back());
    if (on_step_) on_step_(TuneStep{static_cast<int>(rows_.size()), 0, kTuneFinalRounds, &best_row()});
    return &rows_.back();
  }

  void measure_all(const std::vector<OverlapPolicy>& policies) {
    for (const auto& p : policies) measure(p);
  }

  OverlapPolicy best() const { return parse_policy(best_row().policy); }
  const Row& best_row() const {
    return *std::min_element(rows_.begin(), rows_.end(),
                             [](const Row& a, const Row& b) { return a.t_overlap_ms < b.t_overlap_ms; });
  }
  const Row* find(const std::string& policy_text) const {
    auto it = index_.find(policy_text);
    return it == index_.end() ? nullptr : &rows_[it->second];
  }
  // The `n` fastest distinct policies so far.
  std::vector<OverlapPolicy> finalists(size_t n) const {
    std::vector<const Row*> sorted;
    for (const auto& r : rows_) sorted.push_back(&r);
    std::sort(sorted.begin(), sorted.end(),
              [](const Row* a, const Row* b) { return a->t_overlap_ms < b->t_overlap_ms; });
    std::vector<OverlapPolicy> out;
    for (size_t i = 0; i < sorted.size() && i < n; ++i) out.push_back(parse_policy(sorted[i]->policy));
    return out;
  }
  const std::vector<Row>& rows() const { return rows_; }
  const std::map<std::string, std::string>& skipped() const { return skipped_; }

 private:
  PolicyTrials& runner_;
  const BenchOptions& options_;
  CaseId id_;
  BestSoFarSink on_best_;  // a copy: tune_case passes a temporary on ranks that do not collect
  TuneStepSink on_step_;   // likewise
  std::vector<Row> rows_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> skipped_;
};

// Measures each distinct policy `rounds` times, one of each per round, and returns one row per
// policy: the round with its median t_overlap. Every policy here has applied before, so none skips.
// Each round starts by measuring the baselines again, and its rows are judged against those: a GPU
// that has warmed up and lowered its clocks over the search slows the baselines as it slows the
// policies, instead of leaving a cooler t_seq and bound to compare with.
std::vector<Row> measure_in_rounds(PolicyTrials& runner, const BenchOptions& options, const CaseId& id,
                                   const std::vector<OverlapPolicy>& policies, int rounds,
                                   const std::function<void(int round)>& on_round) {
  std::vector<OverlapPolicy> distinct;
  for (const auto& p : policies)
    if (std::none_of(distinct.begin(), distinct.end(), [&](const OverlapPolicy& d) { return d == p; }))
      distinct.push_back(p);
  std::vector<std::vector<Row>> measured(distinct.size());
  for (int round = 0; round < rounds; ++round) {
    const NvtxRange range("tune: final round " + std::to_string(round + 1) + "/" + std::to_string(rounds));
    runner.remeasure_baselines();
    for (size_t i = 0; i < distinct.size(); ++i) {
      Row row = blank_row(options, id);
      std::string why;
      TANDEM_REQUIRE(runner.run_policy(distinct[i], row, why),
                     "policy '" + to_string(distinct[i]) + "' applied before but not in the final round: " + why);
      measured[i].push_back(row);
    }
    if (on_round) on_round(round + 1);
  }
  std::vector<Row> out;
  for (auto& rows : measured) {
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.t_overlap_ms < b.t_overlap_ms; });
    out.push_back(rows[rows.size() / 2]);
  }
  return out;
}

}  // namespace

TunedCase tune_case(PolicyTrials& runner, const BenchOptions& options, const CaseId& id,
                    std::vector<std::string>& notes, const BestSoFarSink& on_best_so_far, const TuneStepSink& on_step) {
  Search search(runner, options, id, id.collects ? on_best_so_far : BestSoFarSink{},
                id.collects ? on_step : TuneStepSink{});
  const CaseTraits traits = runner.traits();

  // Stage 1: launch order and priority: the controls every workload can take.
  NvtxRange stage("tune: order and priority");
  search.measure_all(order_candidates());
  // The paper's method (shaping plus priority) at every level, to compare against: its best level
  // is what the paper would pick given the measurement.
  const auto paper_policies = shaping_candidates(parse_policy("priority"), traits);
  stage.next("tune: the paper's shaping levels");
  search.measure_all(paper_policies);
  // Stage 2: each control family on top of the best so far.
  stage.next("tune: control families on the best so far");
  search.measure_all(shaping_candidates(search.best(), traits));
  search.measure_all(sm_target_candidates(search.best(), traits));
  search.measure_all(sm_target_refinements(search.best(), traits));
  search.measure_all(nccl_candidates(search.best()));
  // NCCL's own knobs combine: the best CTA cap with cluster size 1.
  OverlapPolicy combined = search.best();
  combined.nccl_cga_cluster_size = 1;
  search.measure(combined);
  search.measure_all(partition_candidates(search.best(), traits));
  search.measure_all(symmetric_candidates(search.best()));
  search.measure_all(copy_engine_candidates(search.best()));
  search.measure_all(green_candidates(search.best(), traits));
  // Stage 3: with everything else settled, the order and priority may change their verdict.
  stage.next("tune: order and priority again");
  for (const auto& order : order_candidates()) {
    OverlapPolicy p = search.best();
    p.order = order.order;
    p.comm_priority = order.comm_priority;
    search.measure(p);
  }
  // The paper's method at its best measured level (priority alone when nothing can be shaped).
  OverlapPolicy paper = parse_policy("priority");
  for (const auto& p : paper_policies)
    if (const Row* r = search.find(to_string(p)); r && r->t_overlap_ms < search.find(to_string(paper))->t_overlap_ms)
      paper = p;
  // Finalists, the naive policy and the paper's are measured again, in rounds, and judged on those
  // rounds alone: a lucky first measurement does not win by noise, and the comparison is like for
  // like. Each round measures the baselines and every policy once, so a drift in clocks or power
  // over the seconds this takes hits them all alike; each policy keeps its median round, with that
  // round's baselines.
  auto finalists = search.finalists(3);
  finalists.push_back(parse_policy("concurrent"));
  finalists.push_back(paper);
  const auto round_done = [&](int round) {
    if (id.collects && on_step)
      on_step(TuneStep{static_cast<int>(search.rows().size()), round, kTuneFinalRounds, &search.best_row()});
  };
  stage.next("tune: final rounds");
  const std::vector<Row> finals = measure_in_rounds(runner, options, id, finalists, kTuneFinalRounds, round_done);
  const auto final_row = [&](const std::string& policy) {
    const auto it = std::find_if(finals.begin(), finals.end(), [&](const Row& r) { return r.policy == policy; });
    TANDEM_REQUIRE(it != finals.end(), "policy '" + policy + "' was not measured in the final round");
    return *it;
  };

  TunedCase result;
  result.candidates = search.rows();
  result.tuned = *std::min_element(finals.begin(), finals.end(),
                                   [](const Row& a, const Row& b) { return a.t_overlap_ms < b.t_overlap_ms; });
  result.tuned.tuned = true;
  result.tuned.tune_role = "tuned";
  result.naive = final_row("concurrent");
  result.naive.tune_role = "naive";
  result.paper = final_row(to_string(paper));
  result.paper.tune_role = "paper";
  if (id.collects)
    for (const auto& [policy, why] : search.skipped())
      notes.push_back(id.workload + " " + id.collective + ": " + policy + " not applicable: " + why);
  return result;
}

size_t first_case_policy_estimate(const CaseTraits& traits) {
  const OverlapPolicy base = parse_policy("priority");
  // Stage 1, the paper's levels, every family of stage 2 on the same base, the combined NCCL knobs
  // and stage 3's orders: duplicates and pruned candidates make it an upper bound.
  return order_candidates().size() + 2 * shaping_candidates(base, traits).size() +
         sm_target_candidates(base, traits).size() + sm_target_refinements(base, traits).size() +
         nccl_candidates(base).size() + 1 + partition_candidates(base, traits).size() +
         symmetric_candidates(base).size() + copy_engine_candidates(base).size() +
         green_candidates(base, traits).size() + order_candidates().size();
}

TuneOutcome run_tune(const BenchOptions& options, int nranks, const ProgressSink& progress, const TuneSinks& sinks) {
  BenchOptions tune_options = options;
  tune_options.policies_given = false;  // candidates that cannot apply are pruned, not fatal
  TuneOutcome outcome;
  const size_t total = case_count(options);
  size_t done = 0;
  // Progress within each case, on rank 0 (tune_progress.h).
  TuneProgress steps(total, sinks.skip_case ? sinks.resumed_cases : 0);
  size_t tuned = 0;
  std::chrono::steady_clock::time_point first_case_start;
  const CaseBody body = [&](PolicyTrials& runner, const CaseId& id) {
    const std::string name = id.workload + " " + id.collective + " " + size_text(id.bytes);
    const bool reports = id.rank == 0 && progress;
    if (sinks.skip_case && sinks.skip_case(id)) {
      if (reports)
        progress("[" + std::to_string(++done) + "/" + std::to_string(total) + "] " + name + ": tuned before, resumed");
      if (id.collects && sinks.on_resumed) sinks.on_resumed(id);
      return;
    }
    TuneStepSink on_step;
    if (reports) {
      progress("[" + std::to_string(++done) + "/" + std::to_string(total) + "] tuning " + name);
      if (tuned++ == 0) first_case_start = std::chrono::steady_clock::now();
      steps.start_case(done, name, first_case_policy_estimate(runner.traits()));
      on_step = [&](const TuneStep& step) {
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - first_case_start).count();
        progress(steps.step_line(step, elapsed));
      };
    }
    TunedCase result = tune_case(runner, tune_options, id, outcome.notes, sinks.on_best_so_far, on_step);
    if (!id.collects) return;
    outcome.cases.push_back(std::move(result));
    if (sinks.on_case) sinks.on_case(outcome.cases.back());
  };
  outcome.hbm_bandwidth_gbps = for_each_case(tune_options, nranks, body, &outcome.notes, progress);
  const bool gathered_out_of_place =
      !options.in_place && std::any_of(outcome.cases.begin(), outcome.cases.end(),
                                       [](const TunedCase& c) { return c.tuned.collective == "all-gather"; });
  if (gathered_out_of_place)
    outcome.notes.push_back(
        "all-gather ran out of place: under copy-engine its own chunk is still copied by an SM kernel, which "
        "waits for any kernel holding every SM (beside the cuBLAS GEMM, 37-39 % reduction against 43-44 % in "
        "place); if your program can write the input into its chunk of the output (FSDP2, Megatron's "
        "distributed optimizer), tune with --in-place (docs/PERFORMANCE.md)");
  return outcome;
}

}  // namespace tandem::bench
