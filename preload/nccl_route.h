#pragma once
// What one NCCL collective call is, for the library's route rule (tandem/copy_engine_eligibility.h):
// the reduction an NCCL op stands for. Pure (no NCCL header: ops are passed as their values), so it
// is tested on CPU.
#include "tandem/copy_engine_eligibility.h"

namespace tandem::preload {

// nccl.h's values: ncclSum 0, ncclProd 1, ncclMax 2, ncclMin 3, ncclAvg 4; ops from ncclNumOps (5)
// on are the program's own, made per communicator by ncclRedOpCreatePreMulSum (the only kind NCCL
// lets a program make). `known_pre_mul_sum`: the interposer saw that op made on this communicator.
Reduction reduction_of(int nccl_op, bool known_pre_mul_sum);

}  // namespace tandem::preload
