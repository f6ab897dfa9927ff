#pragma once
// Published per-architecture limits of GPUs, as data, so the occupancy model can plan for GPUs
// that are not present (tandem plan --gpu a100).
#include <string>
#include <vector>

#include "tandem/occupancy.h"

namespace tandem {

// Known GPU models: a40, a100, h100, h200, mi250x.
const std::vector<DeviceLimits>& gpu_catalog();
// Lookup by short key ("h200") or full name ("NVIDIA H200"), case-insensitive. Throws tandem::Error
// listing the known keys when absent.
const DeviceLimits& gpu_limits(const std::string& key);
std::vector<std::string> gpu_catalog_keys();
// The first catalogue entry of an architecture ("gfx90a", "sm_90"): what a runtime that reports
// fewer limits than CUDA's (HIP's) starts from. Throws tandem::Error naming the architecture and the
// known ones when none is listed.
const DeviceLimits& gpu_limits_for_arch(const std::string& arch);

// Fills the allocation rules the CUDA runtime and driver do not expose (register and shared-memory
// allocation units, register sub-partitions, per-thread register limit, cluster size) and the HBM
// bandwidth into limits read from a device, from the catalogue entry of the same architecture
// (the exact model's when present). `d.arch` and `d.name` must be set.
void apply_catalog_rules(DeviceLimits& d);

// A typical NCCL 2.28 channel CTA on sm90 (threads, registers, shared memory, cluster size), for
// planning without a GPU. On a GPU, tandem measures the real one instead.
KernelFootprint typical_nccl_footprint(const DeviceLimits&);

}  // namespace tandem
