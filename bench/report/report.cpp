#include "report/report.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <ctime>

#include "tandem/printable.h"

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

// Percentages print as "nan" when undefined (efficiency with nothing to gain), never as garbage.
std::string percent(double fraction) {
  return std::isfinite(fraction) ? format("%9.1f", fraction * 100) : format("%9s", "n/a");
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

std::string column_header_text() {
  return format("#%-11s %-14s %11s %5s %5s %-40s %9s %9s %9s %9s %9s %9s %9s %6s %6s %7s %6s %7s\n", "workload",
                "collective", "bytes", "dtype", "count", "policy", "t_compute", "t_comm", "t_seq", "t_overlap",
                "t_bound", "reduction", "effic.", "c_slow", "m_slow", "busbw", "spread", "#wrong") +
         format("#%-11s %-14s %11s %5s %5s %-40s %9s %9s %9s %9s %9s %9s %9s %6s %6s %7s %6s %7s\n", "", "", "(B)", "",
                "", "", "(ms)", "(ms)", "(ms)", "(ms)", "(ms)", "(%)", "(%)", "(x)", "(x)", "(GB/s)", "(%)", "");
}

std::string row_text(const Row& r) {
  return format(" %-11s %-14s %11llu %5s %5d %-40s %9.3f %9.3f %9.3f %9.3f %9.3f %s %s %6.2f %6.2f %7.1f %6.1f %7lld\n",
                r.workload.c_str(), r.collective.c_str(), static_cast<unsigned long long>(r.bytes), r.dtype.c_str(),
                r.count, r.policy.c_str(), r.t_compute_ms, r.t_comm_ms, r.t_seq_ms, r.t_overlap_ms, r.t_bound_ms,
                percent(r.reduction).c_str(), percent(r.efficiency).c_str(), r.compute_slowdown, r.comm_slowdown,
                r.busbw_gbps, r.spread() * 100, static_cast<long long>(r.wrong));
}

bool passed(const std::vector<Row>& rows) {
  int64_t wrong = 0;
  for (const auto& r : rows) wrong += r.wrong;
  return wrong == 0 && !rows.empty();
}

std::string footer_text(const std::vector<Row>& rows, const std::vector<std::string>& notes) {
  std::string out;
  for (const auto& note : notes) out += "# note: " + note + "\n";
  int64_t wrong = 0;
  for (const auto& r : rows) wrong += r.wrong;
  if (wrong == 0 && !rows.empty()) return out + format("# OK: %zu rows, 0 wrong elements\n", rows.size());
  if (rows.empty()) return out + "# FAILED: no rows measured\n";
  return out + format("# FAILED: %lld wrong elements across %zu rows\n", static_cast<long long>(wrong), rows.size());
}

nlohmann::json to_json(const RunInfo& i, const std::vector<Row>& rows, const std::vector<std::string>& notes,
                       bool complete) {
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
                        {"compute_slowdown", r.compute_slowdown},
                        {"comm_slowdown", r.comm_slowdown},
                        {"algbw_gbps", r.algbw_gbps},
                        {"busbw_gbps", r.busbw_gbps},
                        {"wrong", r.wrong},
                        {"compute_blocks_per_sm", r.compute_blocks_per_sm},
                        {"shape_dynamic_smem", r.shape_dynamic_smem},
                        {"compute_kernel", footprint_json(r.compute_kernel)},
                        {"comm_kernel", footprint_json(r.comm_kernel)}});
  }
  if (!i.rendezvous.empty()) doc["rendezvous"] = i.rendezvous;
  doc["rows"] = std::move(out_rows);
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
