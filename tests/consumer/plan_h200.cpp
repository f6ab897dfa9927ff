// Uses the pure C++ part: how many blocks of a 256-thread, 32-register kernel fit on an H200 SM, the
// GPU described by hand as a user of the installed API would (tandem's own catalogue is internal).
// 2048 threads / 256 = 8 blocks; registers 256 * 32 = 8192 per block, 65536 / 8192 = 8: 8 blocks.
#include <cstdio>

#include "tandem/occupancy.h"

int main() {
  tandem::DeviceLimits h200;
  h200.name = "NVIDIA H200";
  h200.arch = "sm_90";
  h200.sm_count = 132;
  h200.max_threads_per_sm = 2048;
  h200.max_blocks_per_sm = 32;
  h200.regs_per_sm = 65536;
  h200.smem_per_sm = 228 * 1024;
  h200.max_smem_per_block = 227 * 1024;
  h200.smem_reserved_per_block = 1024;
  tandem::KernelFootprint kernel;
  kernel.threads_per_block = 256;
  kernel.regs_per_thread = 32;
  const tandem::Residency r = tandem::residency(h200, kernel);
  std::printf("h200 blocks_per_sm=%d\n", r.blocks_per_sm);
  return r.blocks_per_sm == 8 ? 0 : 1;
}
