#pragma once
// The text form of a kernel footprint, as users type it on the command line:
//   threads=256,regs=32[,smem=0][,dsmem=0][,cluster=1][,name=gemm]
// smem is static shared memory, dsmem dynamic shared memory (bytes, or with a KiB/MiB suffix).
// threads and regs are required; the rest default to 0 (cluster to 1). Unknown, repeated or
// malformed keys throw tandem::Error naming the key and the accepted keys.
#include <string>
#include <string_view>

#include "tandem/occupancy.h"

namespace tandem {

KernelFootprint parse_footprint(std::string_view text);
// "threads=256,regs=32,smem=0,dsmem=0,cluster=1" (plus ",name=..." when named);
// parse_footprint(footprint_to_string(k)) == k.
std::string footprint_to_string(const KernelFootprint&);

}  // namespace tandem
