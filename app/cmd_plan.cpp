// `tandem plan`: what shared-memory shaping would do to a kernel on a GPU, from the occupancy model
// alone (no GPU, no CUDA call), so users can plan for GPUs they do not have.
//
// For every residency the kernel can be shaped to (natural down to 1 block per SM) it prints the
// padding to request, the occupancy left, and whether one communication CTA fits beside the
// compute blocks now, or only once one of them retires (which is when priority decides who goes
// first). The level shape:auto would pick is marked.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "report/report.h"
#include "tandem/error.h"
#include "tandem/footprint_text.h"
#include "tandem/gpu_catalog.h"
#include "tandem/occupancy.h"
#include "tandem/residency_plan.h"
#include "tandem/safe_file.h"
#include "tandem/text.h"

namespace tandem {

// Every field under its own name, for --json.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DeviceLimits, name, arch, sm_count, warp_size, max_threads_per_sm,
                                   max_threads_per_block, max_blocks_per_sm, regs_per_sm, max_regs_per_thread,
                                   max_regs_per_block, reg_alloc_unit, reg_subpartitions, smem_per_sm,
                                   max_smem_per_block, smem_reserved_per_block, smem_alloc_unit, max_cluster_size,
                                   hbm_bandwidth_gbps)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(KernelFootprint, name, threads_per_block, regs_per_thread, static_smem, dynamic_smem,
                                   cluster_size)

namespace cli {

namespace {

struct PlanOptions {
  std::string gpu;
  std::string kernel;
  std::string comm;  // empty: the catalogue's typical NCCL footprint
  std::string json_path;
};

std::string catalog_key_of(const DeviceLimits& limits) {
  const auto keys = gpu_catalog_keys();
  for (const auto& key : keys)
    if (gpu_limits(key).name == limits.name) return key;
  return limits.name;
}

void print_header(const std::string& key, const DeviceLimits& g, const KernelFootprint& kernel,
                  const Residency& natural, const KernelFootprint& comm, bool comm_is_default) {
  std::printf("# tandem plan: occupancy model only (no GPU used)\n");
  std::printf("# gpu     %s: %s (%s), %d SMs, HBM %.1f GB/s\n", key.c_str(), g.name.c_str(), g.arch.c_str(), g.sm_count,
              g.hbm_bandwidth_gbps);
  std::printf("# per SM  %d threads, %d blocks, %d regs (%d per warp unit, %d subpartitions), %lld B shared memory\n",
              g.max_threads_per_sm, g.max_blocks_per_sm, g.regs_per_sm, g.reg_alloc_unit, g.reg_subpartitions,
              static_cast<long long>(g.smem_per_sm));
  const std::string clusters =
      g.max_cluster_size > 0 ? "clusters of up to " + std::to_string(g.max_cluster_size) : std::string("no clusters");
  std::printf(
      "# per blk %d threads, %d regs/thread, %d regs, %lld B shared memory (unit %lld B, %lld B reserved), "
      "warp %d, %s\n",
      g.max_threads_per_block, g.max_regs_per_thread, g.max_regs_per_block,
      static_cast<long long>(g.max_smem_per_block), static_cast<long long>(g.smem_alloc_unit),
      static_cast<long long>(g.smem_reserved_per_block), g.warp_size, clusters.c_str());
  std::printf("# kernel  %s: natural %d blocks/SM, limited by %s\n", footprint_to_string(kernel).c_str(),
              natural.blocks_per_sm, to_string(natural.limiter));
  std::printf("# comm    %s%s\n", footprint_to_string(comm).c_str(),
              comm_is_default ? " (typical for this GPU; on a real GPU tandem measures the NCCL kernel's own)" : "");
  std::printf("# model   clusters are limited per SM like single blocks; their placement across SMs is not modelled\n");
  std::printf(
      "# columns dsmem: dynamic shared memory to request per block (the kernel's own included); compute: "
      "blocks/SM relative to unshaped; comm_fits: one comm CTA fits beside the compute blocks; "
      "after_retire: it fits once one compute block retires\n");
}

nlohmann::json limits_json(const std::string& key, const DeviceLimits& g) {
  nlohmann::json limits = g;
  limits["key"] = key;
  return limits;
}

void write_json(const std::string& path, const std::string& key, const DeviceLimits& gpu, const KernelFootprint& kernel,
                const Residency& natural, const KernelFootprint& comm, const std::vector<PlanLevel>& levels,
                const std::optional<ShapePlan>& chosen) {
  nlohmann::json out = {
      {"gpu", limits_json(key, gpu)},
      {"kernel", kernel},
      {"natural", {{"blocks_per_sm", natural.blocks_per_sm}, {"limiter", to_string(natural.limiter)}}},
      {"comm", comm},
      {"levels", bench::plan_levels_json(levels)},
      {"auto", chosen ? nlohmann::json{{"blocks_per_sm", chosen->blocks_per_sm}, {"dynamic_smem", chosen->dynamic_smem}}
                      : nlohmann::json(nullptr)}};
  write_file_atomically(path, bench::json_text(out, 2) + "\n");
}

void run_plan(const PlanOptions& opt) {
  // What the user gave, checked before anything is printed: any error reads as one plain line.
  const DeviceLimits& gpu = checking_input([&]() -> const DeviceLimits& { return gpu_limits(opt.gpu); });
  const std::string key = catalog_key_of(gpu);
  const KernelFootprint kernel = checking_input([&] { return parse_footprint(opt.kernel); });
  const bool comm_is_default = opt.comm.empty();
  const KernelFootprint comm =
      comm_is_default ? typical_nccl_footprint(gpu) : checking_input([&] { return parse_footprint(opt.comm); });

  const Residency natural = residency(gpu, kernel);
  TANDEM_CHECK_INPUT(natural.blocks_per_sm >= 1, "kernel " + footprint_to_string(kernel) + " cannot be resident on " +
                                                     key + " (" + to_string(natural.limiter) + ")");
  TANDEM_CHECK_INPUT(residency(gpu, comm).blocks_per_sm >= 1, "comm " + footprint_to_string(comm) +
                                                                  " cannot be resident on " + key + " (" +
                                                                  to_string(residency(gpu, comm).limiter) + ")");
  checking_input([&] { require_writable_outputs({{"--json", opt.json_path}}); });

  const auto chosen = least_shaping_with_room(gpu, kernel, comm);
  const auto levels = plan_levels(gpu, kernel, comm, chosen);

  print_header(key, gpu, kernel, natural, comm, comm_is_default);
  std::fputs(plan_table_text(levels).c_str(), stdout);
  if (chosen) {
    std::printf("# shape:auto -> %d blocks/SM, dsmem %lld B\n", chosen->blocks_per_sm,
                static_cast<long long>(chosen->dynamic_smem));
  } else {
    std::printf(
        "# shape:auto -> none: even 1 block/SM leaves no room for the comm CTA; use an SM-count cap or "
        "enqueue the collective first\n");
  }
  if (!opt.json_path.empty()) {
    write_json(opt.json_path, key, gpu, kernel, natural, comm, levels, chosen);
    std::printf("# json    %s\n", opt.json_path.c_str());
  }
  std::printf("# OK\n");
}

}  // namespace

void add_plan_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<PlanOptions>();
  CLI::App* plan = app.add_subcommand(
      "plan", "Plan shared-memory shaping for a kernel on a GPU from the occupancy model (no GPU needed)");
  plan->add_option("--gpu", opt->gpu, "GPU model: " + join(gpu_catalog_keys(), "|"))->required();
  plan->add_option("--kernel", opt->kernel, "compute kernel footprint: threads=N,regs=N[,smem=B][,dsmem=B][,cluster=N]")
      ->required();
  plan->add_option("--comm", opt->comm,
                   "communication CTA footprint, same syntax (default: a typical NCCL channel CTA for the GPU)");
  plan->add_option("--json", opt->json_path,
                   "also write the plan as JSON to this file (its folder must be writable; checked first)");
  plan->callback([opt, &exit_code] {
    run_plan(*opt);
    exit_code = 0;
  });
}

}  // namespace cli
}  // namespace tandem
