#pragma once
// What one NCCL collective call is, for the library's route rule (tandem/copy_engine_eligibility.h)
// and the counters: the reduction an NCCL op stands for, the bytes a call counts. Pure (no NCCL
// header: ops are passed as their values), so it is tested on CPU.
#include <cstdint>

#include "tandem/collective.h"
#include "tandem/copy_engine_eligibility.h"

namespace tandem::preload {

// nccl.h's values: ncclSum 0, ncclProd 1, ncclMax 2, ncclMin 3, ncclAvg 4; ops from ncclNumOps (5)
// on are the program's own, made per communicator by ncclRedOpCreatePreMulSum (the only kind NCCL
// lets a program make). `known_pre_mul_sum`: the interposer saw that op made on this communicator.
Reduction reduction_of(int nccl_op, bool known_pre_mul_sum);

// The bytes one call counts in the stats: nccl-tests' size (tandem::size_elements) times the element
// size, saturating at kSaturated (stats.h) rather than wrapping.
uint64_t collective_bytes(Collective kind, uint64_t count, int nranks, uint64_t element_bytes);

}  // namespace tandem::preload
