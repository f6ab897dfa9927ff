#pragma once
// The bytes one NCCL collective call counts. Pure, so it is tested on CPU.
#include <cstdint>

#include "tandem/collective.h"

namespace tandem::preload {

// The bytes one call counts in the stats: nccl-tests' size (tandem::size_elements) times the element
// size, saturating at kSaturated (stats.h) rather than wrapping.
uint64_t collective_bytes(Collective kind, uint64_t count, int nranks, uint64_t element_bytes);

}  // namespace tandem::preload
