#pragma once
// The names `tandem bench` accepts for workloads and collectives.
#include <string>
#include <vector>

#include "harness/collective.h"
#include "harness/workload.h"

namespace tandem::bench {

struct WorkloadEntry {
  const char* name;
  const char* summary;
  WorkloadFactory make;
};
struct CollectiveEntry {
  const char* name;
  CollectiveFactory make;
};

const std::vector<WorkloadEntry>& workload_registry();
const std::vector<CollectiveEntry>& collective_registry();
// Throw tandem::Error naming the unknown name and listing the accepted ones.
const WorkloadEntry& find_workload(const std::string& name);
const CollectiveEntry& find_collective(const std::string& name);

}  // namespace tandem::bench
