#pragma once
// The NCCL communicator settings a policy names (nccl-ctas, nccl-cga, nccl-cta-policy, and the
// copy-engine and nccl-symmetric policies' needs), as an ncclConfig_t and as a key that tells which
// policies can share one communicator. Which token writes which field, and what, is the token table's
// (tandem/policy_tokens.h, NcclField); here the field names meet ncclConfig_t's members. Header-only
// use of nccl.h: nothing here calls NCCL, so the interposer, which must not load a second NCCL into a
// program, can use it too.
#include <nccl.h>

#include <string>
#include <string_view>

#include "tandem/policy.h"

namespace tandem {

// ncclConfig_t's int field of that name ("minCTAs") in `config`, or nullptr when this build's nccl.h has
// none (tests/cpu/test_nccl_config.cpp checks every field the token table names).
int* nccl_config_field(ncclConfig_t& config, std::string_view name);

// True when the policy changes nothing about the communicator: the caller's own one serves.
bool uses_default_nccl_settings(const OverlapPolicy& policy);

// Writes the policy's settings over `config` and leaves every other field as the caller set it
// (blocking, netName, ...). A setting the policy does not name is left alone, so a program's own
// choices survive unless the policy overrides them; the one exception keeps the CTA range
// consistent: a bound of the caller's that contradicts the policy's bound is moved to it (the
// caller's minCTAs 32 under nccl-ctas:..4 becomes 4, its maxCTAs 2 under nccl-ctas:8.. becomes 8).
void apply_nccl_settings(const OverlapPolicy& policy, ncclConfig_t& config);

// Equal keys <=> one communicator can serve both policies; "" for the default settings. Windows
// stay registered on a communicator until it goes, and NCCL then takes its symmetric paths for every
// collective on it, so a policy that registers windows gets a communicator of its own; copy engines
// get one apart from every other windowed setting, because their windows include the scratch buffer
// of the copy-engine reductions.
std::string nccl_settings_key(const OverlapPolicy& policy);

}  // namespace tandem
