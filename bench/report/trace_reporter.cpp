#include "report/trace_reporter.h"

namespace tandem::bench {

void TraceReporter::report_end(const RunResults& results) {
  RunInfo info = info_;
  info.hbm_bandwidth_gbps = results.hbm_bandwidth_gbps;
  nlohmann::json about = to_json(info, {}, {});
  about.erase("rows");
  about.erase("notes");
  write_trace(path_, results.traces, about);
}

}  // namespace tandem::bench
