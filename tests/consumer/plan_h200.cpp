// Uses the pure C++ part: how many blocks of a 256-thread, 32-register kernel fit on an H200 SM.
// 2048 threads / 256 = 8 blocks; registers 256 * 32 = 8192 per block, 65536 / 8192 = 8: 8 blocks.
#include <cstdio>

#include "tandem/gpu_catalog.h"
#include "tandem/occupancy.h"

int main() {
  tandem::KernelFootprint kernel;
  kernel.threads_per_block = 256;
  kernel.regs_per_thread = 32;
  const tandem::Residency r = tandem::residency(tandem::gpu_limits("h200"), kernel);
  std::printf("h200 blocks_per_sm=%d\n", r.blocks_per_sm);
  return r.blocks_per_sm == 8 ? 0 : 1;
}
