#pragma once
// What a kernel is, from the name the driver reports for it. One classifier for every part of tandem
// that must tell NCCL's kernels from compute: the bench harness (which footprint to leave room for)
// and the interposer (which launches to elevate).
#include <string_view>

namespace tandem {

// NCCL's device kernels: ncclDevKernel_* (collectives, p2p) and ncclSymkDevKernel_* (symmetric-memory
// kernels, NCCL >= 2.27). NCCL's kernels are C++ functions, so the driver usually reports them
// mangled; accepts the plain name, an Itanium-mangled one ("_Z31ncclDevKernel_...") and a demangled
// one ("ncclDevKernel_...(args)").
bool is_nccl_kernel_name(std::string_view name);

// The kernels of tandem's copy-engine collectives (tandemCollective_*: the sum of a reduction, the
// scaling copy), which do the route's communication work on the SMs: classed with NCCL's (elevated
// by `priority`, never shaped, counted as communication). Same forms as above.
bool is_tandem_collective_kernel_name(std::string_view name);

}  // namespace tandem
