#pragma once
// What `tandem bench` prints and writes: a '#' header echoing the resolved configuration, one
// fixed-width row per (workload, collective, size, policy), an OK/FAILED footer, and the JSON
// document of docs/BENCH_JSON.md. Pure C++ (CPU-tested). The measurement fills Rows; the reporters
// (report/reporter.h) turn them into these texts.
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tandem/occupancy.h"
#include "tandem/residency_plan.h"

namespace tandem::bench {

struct FootprintRecord {
  std::string kernel;
  int grid_blocks = 0;
  KernelFootprint footprint;
  int blocks_per_sm = 0;  // on this GPU, by the occupancy model
};

// A derived figure of a row left undefined: its JSON name (reduction, efficiency, compute_slowdown,
// comm_slowdown, compute_tax) and why, in words that hold for every row it applies to (the notes
// gather rows by it).
struct UndefinedFigure {
  std::string figure;
  std::string reason;
};

struct Row {
  std::string workload;
  std::string collective;
  std::string dtype;
  uint64_t bytes = 0;
  int ranks = 0;
  int count = 0;  // compute units per step
  std::string policy;
  bool tuned = false;
  // tandem tune's final round, in which the finalists, the naive policy and the paper's are measured
  // again together: "naive", "paper" or "tuned" for the rows of that round it reports; empty otherwise.
  std::string tune_role;
  double t_compute_ms = 0, t_comm_ms = 0, t_seq_ms = 0, t_overlap_ms = 0, t_bound_ms = 0, t_chain_ms = 0;
  double t_overlap_min_ms = 0, t_overlap_max_ms = 0;
  // The fastest and slowest timed step of each baseline: the noise a derived figure's denominator
  // must stand out of (harness/metrics.h denominator_defined).
  double t_compute_min_ms = 0, t_compute_max_ms = 0, t_comm_min_ms = 0, t_comm_max_ms = 0;
  double t_seq_min_ms = 0, t_seq_max_ms = 0;
  // Derived figures; NaN when undefined, with the reason in `undefined`.
  double reduction = 0, efficiency = 0;
  double compute_slowdown = 0, comm_slowdown = 0;
  // One rank (nothing to overlap): the compute alone under the policy (median, fastest, slowest
  // step) and its cost, t_compute_policy / t_compute - 1. Zero and NaN on more ranks.
  double t_compute_policy_ms = 0, t_compute_policy_min_ms = 0, t_compute_policy_max_ms = 0;
  double compute_tax = std::numeric_limits<double>::quiet_NaN();
  std::vector<UndefinedFigure> undefined;
  double algbw_gbps = 0, busbw_gbps = 0;  // the collective alone, nccl-tests convention
  int64_t wrong = 0;
  int compute_blocks_per_sm = -1;   // under the policy's shaping; -1 when the kernel is a library's
  int64_t shape_dynamic_smem = -1;  // dynamic shared memory per compute block under the policy
  FootprintRecord compute_kernel;   // the compute unit's first kernel, as launched unshaped
  FootprintRecord comm_kernel;      // the collective's kernel, as NCCL launched it
  double spread() const { return t_overlap_ms > 0 ? (t_overlap_max_ms - t_overlap_min_ms) / t_overlap_ms : 0; }
  // A row of `tandem bench` on one GPU: the compute-tax table's, not the overlap table's.
  bool one_gpu = false;
};

struct RunInfo {
  std::string tool = "bench";  // bench | tune
  std::string tandem_version;
  std::string commit;
  std::string command;
  std::string date;  // ISO 8601 UTC
  std::string gpu;
  int gpus = 0;
  std::string driver;
  std::string cuda;
  std::string nccl;
  std::string launch = "threads";   // threads | mpi | torchrun | slurm | env (ranks/launch_env.h)
  int world_size = 0;               // ranks in all (threads: the GPUs driven)
  std::string rendezvous;           // process modes: how the ranks met ("mpi", "file:DIR", ...)
  double hbm_bandwidth_gbps = 0;    // measured copy bandwidth, rank 0
  bool one_gpu = false;             // `tandem bench` on one rank: the compute-tax table
  std::vector<std::string> config;  // "key value" lines echoed in the header
};

// `tandem bench` on one GPU: the residency plan (tandem/residency_plan.h) of a workload's shapeable
// compute kernel on the GPU found, beside a typical NCCL CTA (one rank launches none to measure).
struct ResidencyPlan {
  std::string workload;
  std::string gpu;
  KernelFootprint kernel;
  KernelFootprint comm;
  int natural_blocks_per_sm = 0;
  std::vector<PlanLevel> levels;
};

// The version of the JSON document to_json writes (docs/BENCH_JSON.md). 2: t_bound is
// max(t_chain, HBM term) (commit 799c52f changed it for scenarios); files without the key are 1.
inline constexpr int kBenchJsonSchemaVersion = 2;

// What printf would print for `fmt` and the arguments, at most 511 characters.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// `args` as one line a POSIX shell reads back as the same words: bare when possible, else in single
// quotes, and in bash's $'...' form with \xHH escapes for control characters and bytes that are not
// UTF-8, so the recorded command (RunInfo::command) is printable and valid UTF-8.
std::string shell_command(const std::vector<std::string>& args);

// 512MiB, 1GiB, 4096B.
std::string size_text(uint64_t bytes);
// "25 s", "6 min", "1.4 h": the time left in both tunes' progress lines.
std::string duration_text(double seconds);

std::string header_text(const RunInfo& info);
// The overlap table's, or with `one_gpu` the compute-tax table's (Row::one_gpu).
std::string column_header_text(bool one_gpu = false);
// One line of the table its row belongs to; an undefined figure reads "—".
std::string row_text(const Row& row);
// A fraction as a rounded percentage ("92 %"), or "— (undefined)" for NaN: for figures in prose.
std::string percent_text(double fraction);
// The plans as '#' lines, one block per workload.
std::string residency_plan_text(const std::vector<ResidencyPlan>& plans);
nlohmann::json plan_levels_json(const std::vector<PlanLevel>& levels);
// One note per reason a figure was left undefined: which figures, in how many rows, why.
std::vector<std::string> undefined_notes(const std::vector<Row>& rows);
// Whether every row has every figure of its table undefined (then the footer says so, not "OK").
bool all_undefined(const std::vector<Row>& rows);
// Whether a run passed: at least one row, and no wrong element in any (the command's exit status).
bool passed(const std::vector<Row>& rows);
// The notes (undefined_notes first), then "# OK: N rows, 0 wrong elements", "# NO FIGURES: ..." when
// every figure is undefined, or "# FAILED: ...".
std::string footer_text(const std::vector<Row>& rows, const std::vector<std::string>& notes);
// The document of docs/BENCH_JSON.md. `complete` is false for the rows of a run that was
// interrupted (Ctrl-C) before it measured every case.
// Its notes are undefined_notes(rows), then `notes`.
nlohmann::json to_json(const RunInfo& info, const std::vector<Row>& rows, const std::vector<std::string>& notes,
                       bool complete = true, const std::vector<ResidencyPlan>& plans = {});
// `doc` as text that is always valid UTF-8: a byte that is not (from a command line, a path, a GPU
// name) becomes U+FFFD instead of making nlohmann::json throw and lose the run's results.
// `indent` < 0: one line.
std::string json_text(const nlohmann::json& doc, int indent);
// Current UTC time, ISO 8601.
std::string utc_now_iso8601();

}  // namespace tandem::bench
