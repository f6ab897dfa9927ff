#include "nccl_group_result.h"

namespace tandem::preload {

int group_end_result(int nccl, int routed, int forwarded) {
  constexpr int kSuccess = 0, kInProgress = 7;  // ncclSuccess, ncclInProgress
  if (nccl != kSuccess && nccl != kInProgress) return nccl;
  if (routed != kSuccess) return routed;
  if (forwarded != kSuccess) return forwarded;
  return nccl;
}

}  // namespace tandem::preload
