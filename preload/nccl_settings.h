#pragma once
// The communicator settings the interposer applies when the program creates an NCCL communicator:
// the policy's nccl-ctas, nccl-cga and nccl-cta-policy tokens (tandem/nccl_config.h), written over
// the program's own ncclConfig_t. Header-only use of nccl.h: nothing here calls NCCL. Pure, tested
// on CPU.
#include <nccl.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "tandem/policy.h"

namespace tandem::preload {

// The part of `policy` that configures a communicator at its creation; the rest of the policy
// cleared. `copy-engine`'s own needs (CTA policy zero, windows) are not included: they belong to the
// copy-engine data path, which creates what it needs itself.
OverlapPolicy communicator_settings(const OverlapPolicy& policy);

// A configuration for the real creation function: the program's (or NCCL_CONFIG_INITIALIZER's when
// it gave none) with the settings written over it. Storage of its own, as large as the larger of
// the program's struct and ours, so that fields of a newer NCCL header than ours travel unchanged.
class OverlaidConfig {
 public:
  ncclConfig_t* get() { return reinterpret_cast<ncclConfig_t*>(storage_.data()); }
  const ncclConfig_t* get() const { return reinterpret_cast<const ncclConfig_t*>(storage_.data()); }

 private:
  friend std::optional<OverlaidConfig> overlay_config(const OverlapPolicy&, const ncclConfig_t*);
  std::vector<uint64_t> storage_;  // 8-byte aligned, as ncclConfig_t needs
};

// nullopt when the program's config cannot be read as one (no NCCL magic, or a size field that is
// not that of any ncclConfig_t): the program's call then goes to NCCL unchanged, which reports it.
// A config of an older NCCL header than ours is copied as far as it goes, our defaults
// (NCCL_CONFIG_UNDEF_*) follow, and its version is raised to ours so that NCCL reads the fields we
// set; a newer one keeps its size, version and every field we do not know.
std::optional<OverlaidConfig> overlay_config(const OverlapPolicy& settings, const ncclConfig_t* program);

// Whether a communicator NCCL creates with `config` (null: none, as ncclCommInitRank) is non-blocking,
// by NCCL's rule (init.cc, parseCommConfig and envConfigOverride): NCCL_COMM_BLOCKING, when 0 or 1,
// wins over the configuration's `blocking`; undefined is blocking. `inherited`: what a split or shrink
// without a configuration takes from its parent. `blocking_variable`: NCCL_COMM_BLOCKING's value, if set.
bool is_non_blocking(const ncclConfig_t* config, std::optional<int> blocking_variable, bool inherited = false);

}  // namespace tandem::preload
