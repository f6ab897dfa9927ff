#include "nccl_settings.h"

#include <algorithm>
#include <cstring>

#include "tandem/nccl_config.h"
#include "tandem/policy_tokens.h"

namespace tandem::preload {
namespace {

// NCCL's own bound on what it copies is sizeof(ncclConfig_t) of its version; a struct many times
// ours is not a config but garbage, and copying it could read past the program's memory.
constexpr size_t kLargestPlausibleConfig = 64 * sizeof(ncclConfig_t);
constexpr unsigned kNcclConfigMagic = 0xcafebeef;  // NCCL_API_MAGIC, what NCCL_CONFIG_INITIALIZER sets

}  // namespace

OverlapPolicy communicator_settings(const OverlapPolicy& policy) {
  // Every token cleared but those that write a field into a program's communicators (the token
  // table's NcclField with NcclScope::Program): a new nccl-* token is kept without a line here.
  OverlapPolicy settings = policy;
  for (const PolicyToken& row : policy_tokens()) {
    const bool configures_program =
        std::any_of(row.nccl.begin(), row.nccl.end(), [](const NcclField& f) { return f.scope == NcclScope::Program; });
    if (!configures_program) row.clear(settings);
  }
  return settings;
}

bool is_non_blocking(const ncclConfig_t* config, std::optional<int> blocking_variable, bool inherited) {
  if (blocking_variable == 0 || blocking_variable == 1) return *blocking_variable == 0;
  // A configuration NCCL would refuse, or one too short to hold `blocking`, says nothing.
  if (!config || config->magic != kNcclConfigMagic || config->size < offsetof(ncclConfig_t, blocking) + sizeof(int) ||
      config->size > kLargestPlausibleConfig)
    return inherited;
  return config->blocking == 0;
}

std::optional<OverlaidConfig> overlay_config(const OverlapPolicy& settings, const ncclConfig_t* program) {
  const ncclConfig_t ours = NCCL_CONFIG_INITIALIZER;
  size_t program_size = 0;
  if (program) {
    // The first fields (size, magic, version) are the same in every NCCL version.
    if (program->magic != kNcclConfigMagic) return std::nullopt;
    program_size = program->size;
    if (program_size < offsetof(ncclConfig_t, blocking) || program_size > kLargestPlausibleConfig) return std::nullopt;
  }
  const size_t size = std::max(program_size, sizeof(ncclConfig_t));
  OverlaidConfig out;
  out.storage_.assign((size + sizeof(uint64_t) - 1) / sizeof(uint64_t), 0);
  unsigned char* bytes = reinterpret_cast<unsigned char*>(out.storage_.data());
  std::memcpy(bytes, &ours, sizeof ours);
  if (program) std::memcpy(bytes, program, program_size);
  ncclConfig_t* config = out.get();
  config->size = size;
  config->version = std::max(config->version, ours.version);
  apply_nccl_settings(settings, *config);
  return out;
}

}  // namespace tandem::preload
