#include "nccl_route.h"

namespace tandem::preload {

Reduction reduction_of(int nccl_op, bool known_pre_mul_sum) {
  constexpr int kSum = 0, kAvg = 4, kNumOps = 5;
  if (nccl_op == kSum) return Reduction::Sum;
  if (nccl_op == kAvg) return Reduction::Average;
  if (nccl_op >= kNumOps && known_pre_mul_sum) return Reduction::PreMulSum;
  return Reduction::Unsupported;
}

}  // namespace tandem::preload
