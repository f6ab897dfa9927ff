#pragma once
// The footprint of the last NCCL launch, packed into one 64-bit word so that it can be published by
// the launching thread and read by any compute launch with a single atomic, without a lock.
//
//   bits  0-11  threads per block   (<= 4095)
//   bits 12-20  registers per thread (<= 511)
//   bits 21-38  static shared memory, bytes (< 256 KiB)
//   bits 39-56  dynamic shared memory, bytes (< 256 KiB)
//   bits 57-62  cluster size (<= 63)
//   bit  63     always 1: 0 means "no NCCL launch seen yet"
// Values above a field's range saturate (no GPU has more than 227 KiB shared memory per block).
#include <cstdint>
#include <optional>

#include "tandem/occupancy.h"

namespace tandem::preload {

uint64_t pack_footprint(const KernelFootprint&);
std::optional<KernelFootprint> unpack_footprint(uint64_t packed);

}  // namespace tandem::preload
