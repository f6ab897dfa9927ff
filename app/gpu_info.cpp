// `tandem info`, run: the visible GPUs and versions, and the accepted workloads, collectives and
// policies. In the GPU commands module (gpu_commands.h).
#include <cuda_runtime.h>

#include <cstdio>

#include "gpu_commands.h"
#include "harness/registry.h"
#include "tandem/build_info.h"
#include "tandem/cuda_check.h"
#include "tandem/device.h"
#include "tandem/error.h"
#include "tandem/policy.h"

namespace tandem::cli {
namespace {

void print_registries() {
  std::printf("# workloads\n");
  for (const auto& w : bench::workload_registry()) std::printf("  %-12s %s\n", w.name, w.summary);
  std::printf("# collectives\n");
  for (Collective c : kBenchmarkCollectives) std::printf("  %s\n", to_string(c));
  std::printf("# policies\n%s", policy_grammar_help().c_str());
}

void print_gpus() {
  // No GPU (or no driver) is the machine's state, not tandem's failure: one plain line.
  const int n = checking_input([] { return visible_gpu_count(); });
  const SoftwareVersions v = software_versions();
  std::printf("# driver CUDA %s, runtime CUDA %s, NCCL %s\n", v.driver_text().c_str(), v.runtime_text().c_str(),
              v.nccl_text().c_str());
  for (int d = 0; d < n; ++d) {
    const DeviceLimits l = query_device_limits(d);
    int least = 0, greatest = 0;
    TANDEM_CUDA_CHECK(cudaSetDevice(d));
    TANDEM_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    std::printf(
        "# gpu %d: %s (%s), %d SMs; per SM: %d threads, %d blocks, %d registers, %lld B shared memory "
        "(%lld B per block max, %lld B reserved per block); stream priorities %d (least) .. %d (greatest)\n",
        d, l.name.c_str(), l.arch.c_str(), l.sm_count, l.max_threads_per_sm, l.max_blocks_per_sm, l.regs_per_sm,
        static_cast<long long>(l.smem_per_sm), static_cast<long long>(l.max_smem_per_block),
        static_cast<long long>(l.smem_reserved_per_block), least, greatest);
  }
}

}  // namespace

int run_info() {
  std::printf("# tandem %s (%s)\n", TANDEM_VERSION_STRING, TANDEM_GIT_COMMIT);
  print_registries();
  print_gpus();  // last: on a machine without a GPU it throws "no GPU visible" after the static part
  return 0;
}

}  // namespace tandem::cli
