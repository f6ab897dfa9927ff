#include "harness/registry.h"

#include "tandem/error.h"

namespace tandem::bench {

// Each workload and collective lives in its own file and exposes one factory.
std::unique_ptr<Workload> make_gemm_workload(const WorkloadOptions&);
std::unique_ptr<Workload> make_tiled_gemm_workload(const WorkloadOptions&);
std::unique_ptr<Workload> make_stream_workload(const WorkloadOptions&);
std::unique_ptr<Collective> make_all_reduce();
std::unique_ptr<Collective> make_all_gather();
std::unique_ptr<Collective> make_reduce_scatter();
std::unique_ptr<Collective> make_all_to_all();

const std::vector<WorkloadEntry>& workload_registry() {
  static const std::vector<WorkloadEntry> entries = {
      {"gemm", "cuBLASLt GEMM (persistent, one CTA per SM on Hopper)", make_gemm_workload},
      {"tiled-gemm", "tandem's SIMT tiled GEMM: many waves, several blocks per SM", make_tiled_gemm_workload},
      {"stream", "memory-bound STREAM triad a = b + s*c", make_stream_workload},
  };
  return entries;
}

const std::vector<CollectiveEntry>& collective_registry() {
  static const std::vector<CollectiveEntry> entries = {
      {"all-reduce", make_all_reduce},
      {"all-gather", make_all_gather},
      {"reduce-scatter", make_reduce_scatter},
      {"all-to-all", make_all_to_all},
  };
  return entries;
}

namespace {
template <class Entries>
std::string names_of(const Entries& entries) {
  std::string names;
  for (const auto& e : entries) names += (names.empty() ? "" : ", ") + std::string(e.name);
  return names;
}
}  // namespace

const WorkloadEntry& find_workload(const std::string& name) {
  for (const auto& e : workload_registry())
    if (name == e.name) return e;
  TANDEM_THROW("unknown workload '" + name + "'; accepted: " + names_of(workload_registry()));
}

const CollectiveEntry& find_collective(const std::string& name) {
  for (const auto& e : collective_registry())
    if (name == e.name) return e;
  TANDEM_THROW("unknown collective '" + name + "'; accepted: " + names_of(collective_registry()));
}

}  // namespace tandem::bench
