#pragma once
// The names `tandem bench --workload` accepts, one registry: compute workloads, each measured beside
// every collective at every size (a microbenchmark case each), and training scenarios, one case
// each with collectives of their own. The collectives are the library's (tandem/collective.h).
#include <string>
#include <vector>

#include "harness/scenario.h"
#include "harness/workload.h"

namespace tandem::bench {

struct WorkloadEntry {
  const char* name;
  const char* summary;
  WorkloadFactory compute = nullptr;   // a compute workload, or
  ScenarioFactory scenario = nullptr;  // a training scenario
};

const std::vector<WorkloadEntry>& workload_registry();
// Throws tandem::UserError naming the unknown name and listing the accepted ones.
const WorkloadEntry& find_workload(const std::string& name);
// The collective `--collective` names; throws tandem::UserError listing the accepted names.
Collective find_collective(const std::string& name);

}  // namespace tandem::bench
