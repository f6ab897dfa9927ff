#include "program_tools/trace_assembly.h"

#include <algorithm>
#include <fstream>
#include <vector>

#include "program_tools/timeline_files.h"
#include "tandem/error.h"
#include "tandem/process_timeline_json.h"
#include "tandem/safe_file.h"

namespace tandem::program_tools {

size_t assemble_trace(const std::string& folder, const std::string& path, const nlohmann::json& about) {
  const std::vector<std::string> parts = files_named(folder, kTracePartPrefix, kTracePartSuffix);
  // The job's clock starts at the earliest event of any process (each part's header says its own).
  int64_t base = 0;
  bool any = false;
  for (const std::string& part : parts) {
    std::ifstream in(part);
    std::string header;
    TANDEM_REQUIRE(in && std::getline(in, header), "cannot read the trace events " + part);
    const int64_t first = trace_part_first_ns(nlohmann::json::parse(header, nullptr, false), part);
    base = any ? std::min(base, first) : first;
    any = true;
  }
  size_t events = 0;
  const std::string why = try_write_file_atomically(path, [&](const ContentSink& sink) {
    sink("{\"traceEvents\":[\n");
    for (const std::string& part : parts) {
      std::ifstream in(part);
      std::string line;
      std::getline(in, line);  // the header
      while (std::getline(in, line)) {
        if (line.empty()) continue;
        nlohmann::json e = nlohmann::json::parse(line, nullptr, false);
        TANDEM_REQUIRE(e.is_object(), "a line of " + part + " is not a JSON object");
        if (e.contains(kTraceStartKey)) {
          e["ts"] = static_cast<double>(e.at(kTraceStartKey).get<int64_t>() - base) / 1e3;
          e.erase(kTraceStartKey);
        }
        if (e.contains(kTraceDurationKey)) {
          e["dur"] = static_cast<double>(e.at(kTraceDurationKey).get<int64_t>()) / 1e3;
          e.erase(kTraceDurationKey);
        }
        if (!sink((events ? ",\n" : "") + e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))) return;
        ++events;
      }
    }
    nlohmann::json other = about;
    other["clock_origin_ns"] = base;
    sink("\n],\"displayTimeUnit\":\"ms\",\"otherData\":" +
         other.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "}\n");
  });
  TANDEM_REQUIRE(why.empty(), "cannot write the trace: " + why);
  return events;
}

}  // namespace tandem::program_tools
