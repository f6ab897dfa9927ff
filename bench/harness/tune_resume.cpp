#include "harness/tune_resume.h"

#include <algorithm>
#include <limits>

#include "tandem/error.h"
#include "tandem/printable.h"
#include "tandem/safe_file.h"

namespace tandem::bench {
namespace {

// A tune JSON holds a few thousand rows at most; anything far larger is not one.
constexpr size_t kMaxResumeBytes = 256u << 20;

std::string prefix(const std::string& path) { return "--resume " + quoted_value(path) + ": "; }

// The fields of a final-round row that a policy file names.
Row policy_row(const nlohmann::json& j) {
  Row r;
  r.workload = j.at("workload").get<std::string>();
  r.collective = j.at("collective").get<std::string>();
  r.dtype = j.at("dtype").get<std::string>();
  r.bytes = j.at("bytes").get<uint64_t>();
  r.policy = j.at("policy").get<std::string>();
  r.tune_role = j.value("tune_role", "");
  r.tuned = j.value("tuned", false);
  r.t_overlap_ms = j.value("t_overlap_ms", 0.0);
  r.t_seq_ms = j.value("t_seq_ms", 0.0);
  const auto e = j.find("efficiency");
  // null: undefined (report.h), which must not come back as a figure.
  r.efficiency = e != j.end() && e->is_number() ? e->get<double>() : std::numeric_limits<double>::quiet_NaN();
  return r;
}

bool same_case(const ResumedCase& c, const Row& r) {
  return c.workload == r.workload && c.collective == r.collective && c.bytes == r.bytes && c.dtype == r.dtype;
}

}  // namespace

nlohmann::json read_resume_file(const std::string& path) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(read_small_regular_file(path, kMaxResumeBytes));
  } catch (const nlohmann::json::exception& e) {
    TANDEM_USER_ERROR(prefix(path) + "not JSON (" + printable(e.what(), 200) + ")");
  } catch (const Error& e) {
    TANDEM_USER_ERROR(prefix(path) + printable(e.message(), 300));
  }
  TANDEM_CHECK_INPUT(doc.is_object() && doc.value("tool", "") == "tune",
                     prefix(path) + "not the --json of a tandem tune (its \"tool\" is not \"tune\")");
  const auto version = doc.find("schema_version");
  TANDEM_CHECK_INPUT(
      version != doc.end() && version->is_number_integer() && version->get<int>() == kBenchJsonSchemaVersion,
      prefix(path) + "schema_version " + (version == doc.end() ? std::string("missing") : version->dump()) +
          ", this tandem reads " + std::to_string(kBenchJsonSchemaVersion));
  TANDEM_CHECK_INPUT(
      doc.contains("rows") && doc["rows"].is_array() && doc.contains("config") && doc["config"].is_array(),
      prefix(path) + "no \"rows\" or \"config\" array");
  return doc;
}

std::vector<ResumedCase> resumable_cases(const nlohmann::json& doc, const RunInfo& info, const std::string& path) {
  const auto mismatch = [&](const std::string& what, const std::string& theirs, const std::string& ours) {
    TANDEM_USER_ERROR(prefix(path) + "its run had " + what + " " + quoted_value(theirs) + ", this one " +
                      quoted_value(ours) + "; resume with the same GPUs and options");
  };
  const auto text = [](const nlohmann::json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); };
  if (text(doc.value("gpu", nlohmann::json())) != info.gpu)
    mismatch("GPU", text(doc.value("gpu", nlohmann::json())), info.gpu);
  if (doc.value("gpus", -1) != info.gpus)
    mismatch("GPU count", std::to_string(doc.value("gpus", -1)), std::to_string(info.gpus));
  if (doc.value("world_size", -1) != info.world_size)
    mismatch("world size", std::to_string(doc.value("world_size", -1)), std::to_string(info.world_size));
  const nlohmann::json& config = doc["config"];
  for (size_t i = 0; i < std::max(config.size(), info.config.size()); ++i) {
    const std::string theirs = i < config.size() ? text(config[i]) : "";
    const std::string ours = i < info.config.size() ? info.config[i] : "";
    if (theirs != ours) mismatch("configuration line", theirs, ours);
  }

  std::vector<ResumedCase> cases;  // every case with a row, finished or not, in the file's order
  std::vector<bool> finished;
  const nlohmann::json& rows = doc["rows"];
  for (size_t i = 0; i < rows.size(); ++i) {
    Row r;
    try {
      r = policy_row(rows[i]);
    } catch (const nlohmann::json::exception&) {
      TANDEM_USER_ERROR(prefix(path) + "row " + std::to_string(i + 1) + " is not a tandem tune row");
    }
    if (cases.empty() || !same_case(cases.back(), r)) {
      cases.push_back(ResumedCase{r.workload, r.collective, r.dtype, r.bytes});
      finished.push_back(false);
    }
    ResumedCase& c = cases.back();
    c.rows.push_back(rows[i]);
    if (r.tune_role == "naive") c.naive = r;
    if (r.tune_role == "paper") c.paper = r;
    if (r.tune_role == "tuned") {
      c.tuned = r;
      finished.back() = true;
    }
  }
  std::vector<ResumedCase> out;
  for (size_t i = 0; i < cases.size(); ++i)
    if (finished[i]) out.push_back(std::move(cases[i]));
  return out;
}

const ResumedCase* find_resumed(const std::vector<ResumedCase>& cases, const std::string& workload,
                                const std::string& collective, uint64_t bytes, const std::string& dtype) {
  for (const auto& c : cases)
    if (c.workload == workload && c.collective == collective && c.bytes == bytes && c.dtype == dtype) return &c;
  return nullptr;
}

}  // namespace tandem::bench
