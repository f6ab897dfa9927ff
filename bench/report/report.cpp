#include "report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <ctime>

#include "tandem/footprint_text.h"
#include "tandem/printable.h"
#include "tandem/text.h"

namespace tandem::bench {

std::string format(const char* fmt, ...) {
  char buffer[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof(buffer), fmt, args);
  va_end(args);
  return buffer;
}

namespace {

// An undefined figure's cell: "—" right-aligned in `width` columns (it is one column but three bytes,
// so printf's width cannot place it).
std::string undefined_cell(int width) { return std::string(width - 1, ' ') + "\u2014"; }

std::string percent(double fraction, int width = 9) {
  return std::isfinite(fraction) ? format("%*.1f", width, fraction * 100) : undefined_cell(width);
}

std::string times(double ratio) { return std::isfinite(ratio) ? format("%6.2f", ratio) : undefined_cell(6); }

// (max - min) / median of a time's timed steps.
double spread_of(double median, double min, double max) { return median > 0 ? (max - min) / median : 0; }

// Each table's figures, by their JSON names.
const std::vector<std::string>& table_figures(bool one_gpu) {
  static const std::vector<std::string> overlap = {"reduction", "efficiency", "compute_slowdown", "comm_slowdown"};
  static const std::vector<std::string> tax = {"compute_tax"};
  return one_gpu ? tax : overlap;
}

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json footprint_json(const FootprintRecord& r) {
  return {{"kernel", r.kernel},
          {"grid_blocks", r.grid_blocks},
          {"threads_per_block", r.footprint.threads_per_block},
          {"regs_per_thread", r.footprint.regs_per_thread},
          {"static_smem", r.footprint.static_smem},
          {"dynamic_smem", r.footprint.dynamic_smem},
          {"cluster_size", r.footprint.cluster_size},
          {"blocks_per_sm", r.blocks_per_sm}};
}

// An argument as a POSIX shell reads it back: bare when it can be, else in single quotes, and in
// bash's $'...' form when it holds control characters or bytes that are not UTF-8, so the recorded
// command is printable, valid UTF-8 (for the JSON) and still runs as typed.
std::string shell_word(const std::string& arg) {
  if (!is_printable(arg)) {
    std::string out = "$'";
    for (size_t at = 0; at < arg.size();) {
      const size_t length = utf8_sequence_length(arg, at);
      const std::string_view piece(arg.data() + at, length ? length : 1);
      if (length && is_printable(piece)) {
        out += piece == "'" || piece == "\\" ? "\\" + std::string(piece) : std::string(piece);
      } else {
        for (unsigned char c : piece) out += format("\\x%02x", c);
      }
      at += piece.size();
    }
    return out + "'";
  }
  if (!arg.empty() && arg.find_first_of(" \t\"'$\\`*?[]{}()<>|&;~#!") == std::string::npos) return arg;
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
}  // namespace

std::string shell_command(const std::vector<std::string>& args) {
  std::string line;
  for (const auto& arg : args) line += (line.empty() ? "" : " ") + shell_word(arg);
  return line;
}

std::string size_text(uint64_t bytes) {
  if (bytes % (1ull << 30) == 0) return std::to_string(bytes >> 30) + "GiB";
  if (bytes % (1ull << 20) == 0) return std::to_string(bytes >> 20) + "MiB";
  if (bytes % (1ull << 10) == 0) return std::to_string(bytes >> 10) + "KiB";
  return std::to_string(bytes) + "B";
}

std::string duration_text(double seconds) {
  if (seconds < 90) return format("%.0f s", std::max(0.0, seconds));
  if (seconds < 90 * 60) return format("%.0f min", seconds / 60);
  return format("%.1f h", seconds / 3600);
}

std::string header_text(const RunInfo& i) {
  std::string out = "# tandem " + i.tool + " " + i.tandem_version + " (" + i.commit + ")\n";
  out += "# command   " + i.command + "\n";
  out += "# date      " + i.date + "\n";
  out += format("# gpus      %d x %s, driver CUDA %s, runtime CUDA %s, NCCL %s\n", i.gpus, i.gpu.c_str(),
                i.driver.c_str(), i.cuda.c_str(), i.nccl.c_str());
  // One process per rank: say so (the threads mode, the default, keeps its header unchanged).
  if (i.launch != "threads")
    out += format("# launch    %s: %d ranks, one process each%s\n", i.launch.c_str(), i.world_size,
                  i.rendezvous.empty() ? "" : (", rendezvous " + i.rendezvous).c_str());
  if (i.hbm_bandwidth_gbps > 0)
    out += format("# hbm       %.0f GB/s measured device-to-device copy (read + write)\n", i.hbm_bandwidth_gbps);
  for (const auto& line : i.config) out += "# " + line + "\n";
  return out;
}

std::string column_header_text(bool one_gpu) {
  if (one_gpu)
    return format("#%-11s %5s %-40s %9s %6s %9s %6s %9s %6s %7s\n", "workload", "count", "policy", "t_compute",
                  "spread", "t_policy", "spread", "tax", "blk/SM", "#wrong") +
           format("#%-11s %5s %-40s %9s %6s %9s %6s %9s %6s %7s\n", "", "", "", "(ms)", "(%)", "(ms)", "(%)", "(%)", "",
                  "");
  return format("#%-11s %-14s %11s %5s %5s %-40s %9s %9s %9s %9s %9s %9s %9s %6s %6s %7s %6s %7s\n", "workload",
                "collective", "bytes", "dtype", "count", "policy", "t_compute", "t_comm", "t_seq", "t_overlap",
                "t_bound", "reduction", "effic.", "c_slow", "m_slow", "busbw", "spread", "#wrong") +
         format("#%-11s %-14s %11s %5s %5s %-40s %9s %9s %9s %9s %9s %9s %9s %6s %6s %7s %6s %7s\n", "", "", "(B)", "",
                "", "", "(ms)", "(ms)", "(ms)", "(ms)", "(ms)", "(%)", "(%)", "(x)", "(x)", "(GB/s)", "(%)", "");
}

std::string row_text(const Row& r) {
  if (r.one_gpu) {
    const std::string blocks = r.compute_blocks_per_sm >= 0 ? std::to_string(r.compute_blocks_per_sm) : "-";
    return format(" %-11s %5d %-40s %9.3f %6.1f %9.3f %6.1f %s %6s %7lld\n", r.workload.c_str(), r.count,
                  r.policy.c_str(), r.t_compute_ms,
                  spread_of(r.t_compute_ms, r.t_compute_min_ms, r.t_compute_max_ms) * 100, r.t_compute_policy_ms,
                  spread_of(r.t_compute_policy_ms, r.t_compute_policy_min_ms, r.t_compute_policy_max_ms) * 100,
                  percent(r.compute_tax).c_str(), blocks.c_str(), static_cast<long long>(r.wrong));
  }
  return format(" %-11s %-14s %11llu %5s %5d %-40s %9.3f %9.3f %9.3f %9.3f %9.3f %s %s %s %s %7.1f %6.1f %7lld\n",
                r.workload.c_str(), r.collective.c_str(), static_cast<unsigned long long>(r.bytes), r.dtype.c_str(),
                r.count, r.policy.c_str(), r.t_compute_ms, r.t_comm_ms, r.t_seq_ms, r.t_overlap_ms, r.t_bound_ms,
                percent(r.reduction).c_str(), percent(r.efficiency).c_str(), times(r.compute_slowdown).c_str(),
                times(r.comm_slowdown).c_str(), r.busbw_gbps, r.spread() * 100, static_cast<long long>(r.wrong));
}

std::string percent_text(double fraction) {
  return std::isfinite(fraction) ? format("%.0f %%", fraction * 100) : "\u2014 (undefined)";
}

std::string residency_plan_text(const std::vector<ResidencyPlan>& plans) {
  std::string out;
  for (const auto& p : plans) {
    out += format(
        "# plan      %s on %s: %s, natural %d blocks/SM, beside a typical NCCL CTA (%s); the occupancy "
        "model, as `tandem plan` prints it\n",
        p.workload.c_str(), p.gpu.c_str(), footprint_to_string(p.kernel).c_str(), p.natural_blocks_per_sm,
        footprint_to_string(p.comm).c_str());
    const std::string table = plan_table_text(p.levels);
    for (size_t at = 0; at < table.size();) {
      const size_t end = table.find('\n', at);
      out += "#   " + table.substr(at, end - at) + "\n";
      at = end + 1;
    }
  }
  return out;
}

nlohmann::json plan_levels_json(const std::vector<PlanLevel>& levels) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& l : levels) {
    out.push_back({{"blocks_per_sm", l.blocks_per_sm},
                   {"dynamic_smem", l.dynamic_smem},
                   {"warp_occupancy", l.residency.warp_occupancy},
                   {"compute_fraction", l.compute_fraction},
                   {"limiter", to_string(l.residency.limiter)},
                   {"comm_fits", l.comm_fits},
                   {"comm_fits_after_retire", l.comm_fits_after_retire},
                   {"auto", l.is_auto}});
  }
  return out;
}

std::vector<std::string> undefined_notes(const std::vector<Row>& rows) {
  // By reason, in the order first met: the figures it left undefined and the rows it touched.
  struct Reason {
    std::string why;
    std::vector<std::string> figures;
    size_t rows = 0;
  };
  std::vector<Reason> reasons;
  for (const auto& r : rows) {
    std::vector<size_t> touched;
    for (const auto& u : r.undefined) {
      auto it = std::find_if(reasons.begin(), reasons.end(), [&](const Reason& x) { return x.why == u.reason; });
      if (it == reasons.end()) it = reasons.insert(reasons.end(), Reason{u.reason, {}, 0});
      if (std::find(it->figures.begin(), it->figures.end(), u.figure) == it->figures.end())
        it->figures.push_back(u.figure);
      const size_t at = static_cast<size_t>(it - reasons.begin());
      if (std::find(touched.begin(), touched.end(), at) == touched.end()) touched.push_back(at);
    }
    for (size_t at : touched) ++reasons[at].rows;
  }
  std::vector<std::string> notes;
  for (const auto& x : reasons)
    notes.push_back(join(x.figures, ", ") + " undefined (\u2014 in the table, null in JSON) in " +
                    std::to_string(x.rows) + " of " + std::to_string(rows.size()) + " rows: " + x.why);
  return notes;
}

bool all_undefined(const std::vector<Row>& rows) {
  if (rows.empty()) return false;
  for (const auto& r : rows)
    for (const auto& figure : table_figures(r.one_gpu))
      if (std::none_of(r.undefined.begin(), r.undefined.end(),
                       [&](const UndefinedFigure& u) { return u.figure == figure; }))
        return false;
  return true;
}

bool passed(const std::vector<Row>& rows) {
  int64_t wrong = 0;
  for (const auto& r : rows) wrong += r.wrong;
  return wrong == 0 && !rows.empty();
}

std::string footer_text(const std::vector<Row>& rows, const std::vector<std::string>& notes) {
  std::string out;
  for (const auto& note : undefined_notes(rows)) out += "# note: " + note + "\n";
  for (const auto& note : notes) out += "# note: " + note + "\n";
  int64_t wrong = 0;
  for (const auto& r : rows) wrong += r.wrong;
  if (rows.empty()) return out + "# FAILED: no rows measured\n";
  if (wrong != 0)
    return out + format("# FAILED: %lld wrong elements across %zu rows\n", static_cast<long long>(wrong), rows.size());
  if (all_undefined(rows))
    return out + format("# NO FIGURES: %zu rows, 0 wrong elements, every figure undefined (the notes say why)\n",
                        rows.size());
  return out + format("# OK: %zu rows, 0 wrong elements\n", rows.size());
}

nlohmann::json to_json(const RunInfo& i, const std::vector<Row>& rows, const std::vector<std::string>& given_notes,
                       bool complete, const std::vector<ResidencyPlan>& plans) {
  std::vector<std::string> notes = undefined_notes(rows);
  notes.insert(notes.end(), given_notes.begin(), given_notes.end());
  nlohmann::json doc = {{"schema_version", kBenchJsonSchemaVersion},
                        {"complete", complete},
                        {"tool", i.tool},
                        {"tandem_version", i.tandem_version},
                        {"commit", i.commit},
                        {"command", i.command},
                        {"date", i.date},
                        {"gpu", i.gpu},
                        {"gpus", i.gpus},
                        {"driver", i.driver},
                        {"cuda", i.cuda},
                        {"nccl", i.nccl},
                        {"launch", i.launch},
                        {"world_size", i.world_size},
                        {"hbm_bandwidth_gbps", i.hbm_bandwidth_gbps},
                        {"one_gpu", i.one_gpu},
                        {"config", i.config},
                        {"notes", notes}};
  nlohmann::json out_rows = nlohmann::json::array();
  for (const auto& r : rows) {
    out_rows.push_back({{"workload", r.workload},
                        {"collective", r.collective},
                        {"dtype", r.dtype},
                        {"bytes", r.bytes},
                        {"ranks", r.ranks},
                        {"count", r.count},
                        {"policy", r.policy},
                        {"tuned", r.tuned},
                        {"tune_role", r.tune_role},
                        {"t_compute_ms", r.t_compute_ms},
                        {"t_comm_ms", r.t_comm_ms},
                        {"t_seq_ms", r.t_seq_ms},
                        {"t_overlap_ms", r.t_overlap_ms},
                        {"t_overlap_min_ms", r.t_overlap_min_ms},
                        {"t_overlap_max_ms", r.t_overlap_max_ms},
                        {"t_bound_ms", r.t_bound_ms},
                        {"t_chain_ms", r.t_chain_ms},
                        {"bound_fraction",
                         r.t_overlap_ms > 0 ? nlohmann::json(r.t_bound_ms / r.t_overlap_ms) : nlohmann::json(nullptr)},
                        {"reduction", number_or_null(r.reduction)},
                        {"efficiency", number_or_null(r.efficiency)},
                        {"compute_slowdown", number_or_null(r.compute_slowdown)},
                        {"comm_slowdown", number_or_null(r.comm_slowdown)},
                        {"algbw_gbps", r.algbw_gbps},
                        {"busbw_gbps", r.busbw_gbps},
                        {"wrong", r.wrong},
                        {"compute_blocks_per_sm", r.compute_blocks_per_sm},
                        {"shape_dynamic_smem", r.shape_dynamic_smem},
                        {"compute_kernel", footprint_json(r.compute_kernel)},
                        {"comm_kernel", footprint_json(r.comm_kernel)}});
    nlohmann::json& row = out_rows.back();
    row["t_compute_min_ms"] = r.t_compute_min_ms;
    row["t_compute_max_ms"] = r.t_compute_max_ms;
    row["t_comm_min_ms"] = r.t_comm_min_ms;
    row["t_comm_max_ms"] = r.t_comm_max_ms;
    row["t_seq_min_ms"] = r.t_seq_min_ms;
    row["t_seq_max_ms"] = r.t_seq_max_ms;
    nlohmann::json undefined = nlohmann::json::object();
    for (const auto& u : r.undefined) undefined[u.figure] = u.reason;
    row["undefined"] = std::move(undefined);
    if (r.one_gpu) {
      row["t_compute_policy_ms"] = r.t_compute_policy_ms;
      row["t_compute_policy_min_ms"] = r.t_compute_policy_min_ms;
      row["t_compute_policy_max_ms"] = r.t_compute_policy_max_ms;
      row["compute_tax"] = number_or_null(r.compute_tax);
    }
  }
  if (!i.rendezvous.empty()) doc["rendezvous"] = i.rendezvous;
  doc["rows"] = std::move(out_rows);
  if (i.one_gpu) {
    nlohmann::json out_plans = nlohmann::json::array();
    for (const auto& p : plans)
      out_plans.push_back({{"workload", p.workload},
                           {"gpu", p.gpu},
                           {"kernel", footprint_to_string(p.kernel)},
                           {"comm", footprint_to_string(p.comm)},
                           {"natural_blocks_per_sm", p.natural_blocks_per_sm},
                           {"levels", plan_levels_json(p.levels)}});
    doc["residency_plans"] = std::move(out_plans);
  }
  return doc;
}

std::string json_text(const nlohmann::json& doc, int indent) {
  return doc.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

}  // namespace tandem::bench
