#pragma once
// `tandem run --trace FILE`: the Chrome trace (chrome://tracing, ui.perfetto.dev) of a job, put
// together from the trace part each of its processes wrote at exit (tandem/process_timeline_json.h:
// trace-<pid>.jsonl, a header and then one event a line, times in absolute nanoseconds).
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace tandem::program_tools {

// Every trace part in `folder`: their events, times put on the job's clock (microseconds from the
// earliest event of any process), `about` as "otherData". Written atomically; throws tandem::Error
// naming `path` or a bad part. Returns the number of events written.
size_t assemble_trace(const std::string& folder, const std::string& path, const nlohmann::json& about);

}  // namespace tandem::program_tools
