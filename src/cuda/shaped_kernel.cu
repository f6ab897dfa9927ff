#include <algorithm>

#include "tandem/cuda_check.h"
#include "tandem/device.h"
#include "tandem/shaped_kernel.h"
#include "tandem/shaping.h"

namespace tandem {

namespace {
std::string describe_natural(const KernelFootprint& f, const Residency& r) {
  return "kernel '" + f.name + "' (" + std::to_string(f.threads_per_block) + " threads, " +
         std::to_string(f.regs_per_thread) + " registers, " + std::to_string(f.static_smem + f.dynamic_smem) +
         " B shared) reaches " + std::to_string(r.blocks_per_sm) + " blocks/SM unshaped (limited by " +
         to_string(r.limiter) + ")";
}
}  // namespace

ShapedKernel::ShapedKernel(const void* func, std::string name, int threads_per_block, size_t base_dynamic_smem,
                           bool cooperative)
    : func_(func), cooperative_(cooperative), base_dynamic_smem_(base_dynamic_smem), dynamic_smem_(base_dynamic_smem) {
  int device = 0;
  TANDEM_CUDA_CHECK(cudaGetDevice(&device));
  limits_ = query_device_limits(device);
  footprint_ = kernel_footprint(func, threads_per_block, base_dynamic_smem, name);
  natural_ = residency(limits_, footprint_);
  set_dynamic_smem(base_dynamic_smem);
}

void ShapedKernel::shape(const ShapeTarget& target, const std::optional<KernelFootprint>& comm) {
  using Kind = ShapeTarget::Kind;
  if (target.kind == Kind::None) {
    set_dynamic_smem(base_dynamic_smem_);
    return;
  }
  if (cooperative_)
    TANDEM_THROW("kernel '" + footprint_.name +
                 "' is launched cooperatively: its grid-wide synchronisation "
                 "relies on every block being resident, so it cannot be shaped");
  const ShapePadding padding = shape_padding(limits_, footprint_, target, comm);
  switch (padding.outcome) {
    case PaddingOutcome::Padded:
    case PaddingOutcome::AtTarget:
    case PaddingOutcome::AlreadyHasRoom:
      set_dynamic_smem(static_cast<size_t>(padding.dynamic_smem));
      break;
    case PaddingOutcome::NoCollectiveFootprint:
      TANDEM_THROW("shape:auto needs the collective's footprint");
    case PaddingOutcome::BelowTarget:
    case PaddingOutcome::Unreachable:
    case PaddingOutcome::NotRequested:
      throw_unreachable(target, comm);
  }
  // The model chose the padding; the runtime's calculator must agree, or the model is wrong for this GPU.
  if (target.kind == Kind::BlocksPerSm && blocks_per_sm_ != target.blocks_per_sm)
    TANDEM_THROW("occupancy model and cudaOccupancyMaxActiveBlocksPerMultiprocessor disagree for kernel '" +
                 footprint_.name + "' with " + std::to_string(dynamic_smem_) + " B dynamic shared memory: model " +
                 std::to_string(target.blocks_per_sm) + " blocks/SM, runtime " + std::to_string(blocks_per_sm_));
}

void ShapedKernel::throw_unreachable(const ShapeTarget& target, const std::optional<KernelFootprint>& comm) const {
  if (target.kind == ShapeTarget::Kind::Bytes) {
    const int64_t total = static_cast<int64_t>(base_dynamic_smem_) + target.bytes;
    TANDEM_THROW("shaping target " + to_string(target) + " cannot be reached: kernel '" + footprint_.name +
                 "' would need " + std::to_string(footprint_.static_smem + total) +
                 " B of shared memory per block, above the device maximum of " +
                 std::to_string(limits_.max_smem_per_block) + " B");
  }
  if (target.kind == ShapeTarget::Kind::Auto && comm)
    TANDEM_THROW("shape:auto cannot leave room for the collective's CTA (" + std::to_string(comm->threads_per_block) +
                 " threads, " + std::to_string(comm->regs_per_thread) + " registers, " +
                 std::to_string(comm->static_smem + comm->dynamic_smem) + " B shared): " +
                 describe_natural(footprint_, natural_) + ", and no shared-memory padding frees the rest");
  TANDEM_THROW("shaping target " + to_string(target) + " cannot be reached: " + describe_natural(footprint_, natural_));
}

void ShapedKernel::set_dynamic_smem(size_t bytes) {
  // Above 48 KiB a kernel must opt in to larger dynamic shared memory; setting it once here keeps the
  // launch path free of attribute calls.
  TANDEM_CUDA_CHECK(cudaFuncSetAttribute(func_, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(std::max(bytes, base_dynamic_smem_))));
  dynamic_smem_ = bytes;
  TANDEM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm_, func_, footprint_.threads_per_block,
                                                                  dynamic_smem_));
}

void ShapedKernel::launch(dim3 grid, void** args, cudaStream_t stream) const {
  const dim3 block(static_cast<unsigned>(footprint_.threads_per_block));
  if (cooperative_)
    TANDEM_CUDA_CHECK(cudaLaunchCooperativeKernel(func_, grid, block, args, dynamic_smem_, stream));
  else
    TANDEM_CUDA_CHECK(cudaLaunchKernel(func_, grid, block, args, dynamic_smem_, stream));
}

}  // namespace tandem
