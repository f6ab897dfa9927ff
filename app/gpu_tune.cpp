// `tandem tune` (the benchmark's cases), run: finds the best overlap policy for each case and writes it
// as a policy file that `tandem bench --policy @FILE` and `tandem run --policy @FILE` accept. In the
// GPU commands module (gpu_commands.h); the options are cmd_tune.cpp's.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench_cli.h"
#include "gpu_commands.h"
#include "harness/tune_resume.h"
#include "harness/tuner.h"
#include "report/tune_report.h"
#include "tandem/error.h"
#include "tandem/printable.h"
#include "tandem/safe_file.h"
#include "tune_cli.h"
#include "tune_policy_file.h"

namespace tandem::cli {
namespace {

// What a case's policy file says was tuned: the case and the GPUs.
std::string case_line(const bench::Row& r, const bench::RunInfo& info) {
  return r.workload + " x " + r.collective + " " + bench::size_text(r.bytes) + " " + r.dtype + " on " +
         std::to_string(info.gpus) + " x " + info.gpu;
}

// One case's policy file: comments saying what was tuned and how well, then the policy.
std::string policy_file_text(const bench::TunedCase& c, const bench::RunInfo& info) {
  std::ostringstream how_well;
  const bench::Row& t = c.tuned;
  how_well << "t_overlap " << t.t_overlap_ms << " ms, t_seq " << t.t_seq_ms << " ms, efficiency "
           << bench::percent_text(t.efficiency) << " (naive " << bench::percent_text(c.naive.efficiency) << ", paper "
           << bench::percent_text(c.paper.efficiency) << ")";
  return tune_policy_file_text(info, {case_line(t, info), how_well.str()}, parse_policy(t.policy));
}

// The policy file of a case whose search is still running: its fastest policy so far, which the
// final rounds have not confirmed yet.
std::string best_so_far_text(const bench::Row& best, const bench::RunInfo& info) {
  std::ostringstream unfinished;
  unfinished << "UNFINISHED search: the fastest policy so far (t_overlap " << best.t_overlap_ms << " ms, t_seq "
             << best.t_seq_ms << " ms), not yet confirmed by the final rounds";
  return tune_policy_file_text(info, {case_line(best, info), unfinished.str()}, parse_policy(best.policy));
}

// A case's rows in the JSON: every candidate of the search, then the final round's (the comparison
// the summary prints, and docs/PERFORMANCE.md tabulates).
void append_case_rows(const bench::TunedCase& c, std::vector<bench::Row>& rows) {
  rows.insert(rows.end(), c.candidates.begin(), c.candidates.end());
  for (const bench::Row* r : {&c.naive, &c.paper, &c.tuned}) rows.push_back(*r);
}

// A resumed case as tune_case would have returned it: its final round's rows (no candidates).
bench::TunedCase resumed_case(const bench::ResumedCase& c) {
  bench::TunedCase t;
  t.naive = c.naive;
  t.paper = c.paper;
  t.tuned = c.tuned;
  return t;
}

// With several cases, one file each: FILE becomes FILE-stem.workload.collective.size.policy.
std::string policy_path(const std::string& base, const bench::Row& r, size_t cases) {
  if (cases == 1) return base;
  std::string stem = base;
  const auto dot = stem.rfind(".policy");
  if (dot != std::string::npos && dot + 7 == stem.size()) stem.resize(dot);
  return stem + "." + r.workload + "." + r.collective + "." + bench::size_text(r.bytes) + ".policy";
}

}  // namespace

int run_benchmark_tune(const TuneCli& cli) {
  checking_input([&] {
    TANDEM_CHECK_INPUT(
        cli.show >= 0 && cli.show <= kMaxShow,
        "--show " + std::to_string(cli.show) + " is out of bounds: from 0 to " + std::to_string(kMaxShow));
  });
  // The policy file's folder is checked now; with several cases the files lie beside it.
  const bench::BenchOptions options = resolve_bench_options(*cli.bench, {{"--out", cli.policy_file}});
  // --resume: the file is read (every rank skips the same cases) and checked before any GPU work.
  const nlohmann::json resume_doc = cli.resume.empty() ? nlohmann::json() : bench::read_resume_file(cli.resume);
  const int nranks = resolve_ranks(options);
  bench::RunInfo info = describe_run(options, nranks, "tune");
  const std::vector<bench::ResumedCase> resumed =
      cli.resume.empty() ? std::vector<bench::ResumedCase>{} : bench::resumable_cases(resume_doc, info, cli.resume);
  const std::string dtype = tandem::to_string(options.dtype);
  // With one process per rank, only rank 0 prints and writes files.
  const bool printer = prints(options);
  if (printer) {
    std::fputs(bench::header_text(info).c_str(), stdout);
    std::fflush(stdout);
  }
  // Each case's policy file, and the JSON so far (marked incomplete), are written as soon as the case
  // is tuned: Ctrl-C or a lost rank during a long search keeps every case finished before it. A
  // write that fails here is only reported; the final writes below throw.
  // Every case's rows in the order the cases ran, resumed ones as their file had them.
  nlohmann::json rows_so_far = nlohmann::json::array();
  const auto rows_json = [&](const std::vector<bench::Row>& rows) {
    return bench::to_json(info, rows, {}, false)["rows"];
  };
  const auto document = [&](const std::vector<std::string>& notes, bool complete) {
    nlohmann::json doc = bench::to_json(info, {}, notes, complete);
    doc["rows"] = rows_so_far;
    return doc;
  };
  const auto write_quietly = [](const std::string& path, const std::string& text) {
    const std::string why = try_write_file_atomically(path, text);
    if (!why.empty()) std::fprintf(stderr, "tandem tune: warning: %s\n", printable(why, 1000).c_str());
  };
  bench::TuneSinks sinks;
  sinks.on_case = [&](const bench::TunedCase& c) {
    if (!printer) return;
    write_quietly(policy_path(cli.policy_file, c.tuned, bench::case_count(options)), policy_file_text(c, info));
    std::vector<bench::Row> rows;
    append_case_rows(c, rows);
    for (auto& r : rows_json(rows)) rows_so_far.push_back(std::move(r));
    if (!options.json_path.empty()) write_quietly(options.json_path, bench::json_text(document({}, false), 2) + "\n");
  };
  const auto find_resumed = [&](const std::string& workload, const std::string& collective, uint64_t bytes) {
    return bench::find_resumed(resumed, workload, collective, bytes, dtype);
  };
  sinks.resumed_cases = resumed.size();
  sinks.skip_case = [&](const bench::CaseId& id) { return find_resumed(id.workload, id.collective, id.bytes); };
  std::vector<const bench::ResumedCase*> resumed_done;
  sinks.on_resumed = [&](const bench::CaseId& id) {
    const bench::ResumedCase* c = find_resumed(id.workload, id.collective, id.bytes);
    resumed_done.push_back(c);
    if (!printer) return;
    // Its policy file, unless it is still there (a user may have edited it).
    const std::string path = policy_path(cli.policy_file, c->tuned, bench::case_count(options));
    if (!std::filesystem::exists(path)) write_quietly(path, policy_file_text(resumed_case(*c), info));
    for (const auto& r : c->rows) rows_so_far.push_back(r);
    if (!options.json_path.empty()) write_quietly(options.json_path, bench::json_text(document({}, false), 2) + "\n");
  };
  // Within the case being tuned, its fastest policy so far is in its policy file, marked as such,
  // until the final rounds replace it with the winner: a search interrupted after minutes keeps it.
  sinks.on_best_so_far = [&](const bench::Row& best) {
    if (printer)
      write_quietly(policy_path(cli.policy_file, best, bench::case_count(options)), best_so_far_text(best, info));
  };
  const auto started = std::chrono::steady_clock::now();
  const auto outcome = bench::run_tune(
      options, nranks,
      [&](const std::string& line) {
        if (options.progress) std::fprintf(stderr, "tandem tune: %s\n", line.c_str());
      },
      sinks);
  info.hbm_bandwidth_gbps = outcome.hbm_bandwidth_gbps;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!printer) {
    // Every process holds the same cases (wrong elements summed over all ranks): the same status.
    int64_t wrong = 0;
    for (const auto& c : outcome.cases)
      for (const auto& r : c.candidates) wrong += r.wrong;
    return wrong == 0 && (!outcome.cases.empty() || !resumed_done.empty()) ? 0 : 1;
  }

  std::vector<bench::Row> json_rows, summary;
  for (const auto& c : outcome.cases) {
    append_case_rows(c, json_rows);
    for (const bench::Row* r : {&c.naive, &c.paper, &c.tuned}) summary.push_back(*r);
    const std::string path = policy_path(cli.policy_file, c.tuned, outcome.cases.size() + resumed_done.size());
    // Atomically: `tandem run --policy @FILE` in another job never reads half a policy.
    write_file_atomically(path, policy_file_text(c, info));
    std::fputs(bench::tuned_case_text(c.candidates, c.tuned, path, cli.show).c_str(), stdout);
  }
  for (const bench::ResumedCase* c : resumed_done)
    std::fputs(bench::resumed_case_text(c->workload, c->collective, c->bytes, c->tuned.policy, cli.resume).c_str(),
               stdout);
  std::fputs(bench::tune_summary_text(summary, seconds, json_rows, outcome.notes).c_str(), stdout);
  if (!options.json_path.empty()) {
    auto doc = document(outcome.notes, true);
    doc["tune_seconds"] = seconds;
    write_json(options.json_path, doc);
  }
  int64_t wrong = 0;
  for (const auto& r : rows_so_far) wrong += r.value("wrong", int64_t{0});
  return wrong == 0 && !rows_so_far.empty() ? 0 : 1;
}

}  // namespace tandem::cli
