#pragma once
// Shaped launch of a user kernel: the launch asks for extra dynamic shared memory so that fewer of
// its blocks are resident per SM, leaving registers, threads and shared memory for communication
// CTAs. The kernel's code is untouched; only the launch's dynamic shared-memory size grows.
//
// All decisions happen in shape() (init time), through tandem::shape_padding (shaping.h), the
// decision the interposer makes too; launch() only launches.
#include <optional>
#include <string>

#include "tandem/gpu_runtime.h"
#include "tandem/occupancy.h"
#include "tandem/policy.h"

namespace tandem {

class ShapedKernel {
 public:
  // `func` is a runtime-registered __global__ function; `base_dynamic_smem` is what the kernel
  // itself needs. Reads the kernel's footprint and the current device's limits.
  ShapedKernel(const void* func, std::string name, int threads_per_block, size_t base_dynamic_smem = 0,
               bool cooperative = false);

  // Applies a target (Kind::None restores the natural launch). `comm` is the communication
  // footprint to leave room for (required for Kind::Auto). Throws tandem::Error when the target
  // cannot be reached, naming the kernel, the target and its natural residency; and for
  // cooperative kernels, whose grid-wide synchronisation depends on their residency.
  void shape(const ShapeTarget& target, const std::optional<KernelFootprint>& comm = {});

  void launch(dim3 grid, void** args, cudaStream_t stream) const;

  size_t dynamic_smem() const { return dynamic_smem_; }
  int natural_blocks_per_sm() const { return natural_.blocks_per_sm; }
  // Residency with the current shaping, as the runtime's occupancy calculator reports it.
  int blocks_per_sm() const { return blocks_per_sm_; }
  const KernelFootprint& footprint() const { return footprint_; }
  const DeviceLimits& limits() const { return limits_; }
  const std::string& name() const { return footprint_.name; }

 private:
  void set_dynamic_smem(size_t bytes);
  // Why `target` cannot be met for this kernel, naming the kernel and its natural residency.
  [[noreturn]] void throw_unreachable(const ShapeTarget& target, const std::optional<KernelFootprint>& comm) const;

  const void* func_;
  bool cooperative_;
  size_t base_dynamic_smem_;
  size_t dynamic_smem_;
  KernelFootprint footprint_;
  DeviceLimits limits_;
  Residency natural_;
  int blocks_per_sm_ = 0;
};

}  // namespace tandem
