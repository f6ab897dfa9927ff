#include "harness/run_description.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "harness/case_loop.h"
#include "harness/registry.h"
#include "ranks/process_rank.h"
#include "tandem/build_info.h"
#include "tandem/cuda_check.h"
#include "tandem/device.h"
#include "tandem/text.h"

namespace tandem::bench {

std::vector<std::string> scenario_config_lines(const BenchOptions& o, int nranks) {
  const ScenarioOptions& s = o.scenario;
  std::string policies;
  for (const auto& p : effective_policies(o)) policies += (policies.empty() ? "" : ",") + to_string(p);
  std::vector<std::string> lines = {
      "workloads " + join(o.workloads) + " (training scenarios, docs/WORKLOADS.md)",
      "model     " + std::string(to_string(o.dtype)) + " hidden " + std::to_string(s.hidden) + ", tokens " +
          std::to_string(s.seq) + " per micro-batch, layers " + std::to_string(s.layers) + ", micro-batches " +
          std::to_string(s.micro_batches) + ", sequence-parallel " + (s.sequence_parallel ? "on" : "off") +
          ", DDP buckets " + number(s.first_bucket_mb) + " MiB then " + number(s.bucket_mb) + " MiB, experts " +
          std::to_string(s.experts) + " top-" + std::to_string(s.top_k) + ", " + std::to_string(nranks) + " rank(s)",
      "policies  " + policies,
      "timing    " + std::to_string(o.warmup) + " warm-up + " + std::to_string(o.iters) +
          " timed iterations, median of the slowest rank; events on the GPU",
      "bound     t_seq: one stream; t_compute: collectives skipped; t_comm: the collectives alone, in order; "
      "t_chain: the dependency chain with each operation at its time alone, each stream in program order; "
      "t_bound = max(t_chain, HBM bytes / bandwidth); JSON bound_fraction = t_bound / t_overlap",
      std::string("check     ") +
          (o.check ? "on: every output against a lockstep reference of all ranks (naive fp32-accumulating GEMMs, "
                     "fp32 collective sums), every policy"
                   : "off"),
  };
  for (const auto& name : o.workloads) lines.push_back("scenario  " + make_scenario(name, o, nranks)->describe());
  return lines;
}

RunInfo describe_run(const BenchOptions& o, int nranks, const std::string& tool, const std::string& command) {
  const int device = o.launch.is_process_mode() ? choose_device(o.launch, o.launch_request, visible_gpu_count()) : 0;
  cudaDeviceProp prop{};
  TANDEM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  const SoftwareVersions v = software_versions();
  RunInfo info;
  info.tool = tool;
  info.tandem_version = TANDEM_VERSION_STRING;
  info.commit = TANDEM_GIT_COMMIT;
  info.command = command;
  info.date = utc_now_iso8601();
  info.gpu = prop.name;
  info.gpus = nranks;
  info.driver = v.driver_text();
  info.cuda = v.runtime_text();
  info.nccl = v.nccl_text();
  info.launch = to_string(o.launch.mode);
  info.world_size = nranks;
  // The same choice the ranks make when they meet (ranks/process_rank.h).
  if (o.launch.is_process_mode()) info.rendezvous = planned_rendezvous(o.launch, o.launch_request).describe();
  info.one_gpu = o.one_gpu;
  // One GPU: what it can show comes first, before the configuration.
  const std::vector<std::string> first = o.one_gpu ? one_gpu_lines() : std::vector<std::string>{};
  if (find_workload(o.workloads.front()).scenario) {  // validate() forbids mixing them with microbenchmarks
    info.config = scenario_config_lines(o, nranks);
    info.config.insert(info.config.begin(), first.begin(), first.end());
    // tandem tune chooses the policies itself.
    if (tool != "bench")
      info.config.erase(std::remove_if(info.config.begin(), info.config.end(),
                                       [](const std::string& l) { return l.rfind("policies", 0) == 0; }),
                        info.config.end());
    return info;
  }
  std::string policies;
  for (const auto& p : effective_policies(o)) policies += (policies.empty() ? "" : ",") + to_string(p);
  info.config = {
      "workloads " + join(o.workloads),
      "collectives " + join(o.collectives) + ", " + to_string(o.dtype) + ", " + size_text(o.min_bytes) + ".." +
          size_text(o.max_bytes) + ", factor " + std::to_string(o.step_factor).substr(0, 4) +
          (o.in_place ? ", in place" : ", out of place"),
      std::string("balance   ") + (o.balance ? std::string("on (compute count chosen so that t_compute ~ t_comm") +
                                                   (o.balance_size ? "; then the collective resized to match)" : ")")
                                             : "off, count " + std::to_string(o.count)),
      "timing    " + std::to_string(o.warmup) + " warm-up + " + std::to_string(o.iters) +
          " timed steps, median of the slowest rank; events on the GPU",
      std::string("check     ") +
          (o.check ? "on: collectives exact, GEMMs against an fp32 reference, every policy" : "off"),
  };
  if (tool == "bench") info.config.insert(info.config.begin() + 2, "policies  " + policies);
  info.config.insert(info.config.begin(), first.begin(), first.end());
  for (const auto& name : o.workloads) {
    WorkloadOptions w = o.workload;
    w.dtype = o.dtype;
    info.config.push_back("workload  " + find_workload(name).compute(w)->describe());
  }
  return info;
}

}  // namespace tandem::bench
