#include "tandem/nccl_config.h"

#include <string>
#include <string_view>

#include "tandem/error.h"
#include "tandem/policy_tokens.h"

namespace tandem {
namespace {

static_assert(kNcclCtaPolicyEfficiency == NCCL_CTA_POLICY_EFFICIENCY,
              "the token table's CTA policy values are nccl.h's");
static_assert(kNcclCtaPolicyZero == NCCL_CTA_POLICY_ZERO, "the token table's CTA policy values are nccl.h's");

// Every int field of ncclConfig_t in this build's nccl.h, by the name the token table gives it
// (NcclField::config_field): the one place names meet members, so that a token naming any of them
// needs no line here. A field a later NCCL adds is added here with its version's guard.
struct IntField {
  std::string_view name;
  int ncclConfig_t::*member;
};
constexpr IntField kIntFields[] = {
    {"blocking", &ncclConfig_t::blocking},
    {"cgaClusterSize", &ncclConfig_t::cgaClusterSize},
    {"minCTAs", &ncclConfig_t::minCTAs},
    {"maxCTAs", &ncclConfig_t::maxCTAs},
    {"splitShare", &ncclConfig_t::splitShare},
    {"trafficClass", &ncclConfig_t::trafficClass},
    {"collnetEnable", &ncclConfig_t::collnetEnable},
    {"CTAPolicy", &ncclConfig_t::CTAPolicy},
    {"shrinkShare", &ncclConfig_t::shrinkShare},
    {"nvlsCTAs", &ncclConfig_t::nvlsCTAs},
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
    {"nChannelsPerNetPeer", &ncclConfig_t::nChannelsPerNetPeer},
    {"nvlinkCentricSched", &ncclConfig_t::nvlinkCentricSched},
#endif
};

}  // namespace

int* nccl_config_field(ncclConfig_t& config, std::string_view name) {
  for (const IntField& f : kIntFields)
    if (f.name == name) return &(config.*f.member);
  return nullptr;
}

bool uses_default_nccl_settings(const OverlapPolicy& p) {
  return nccl_field_values(p).empty() && !p.registers_windows();
}

void apply_nccl_settings(const OverlapPolicy& policy, ncclConfig_t& config) {
  for (const NcclFieldValue& v : nccl_field_values(policy)) {
    int* field = nccl_config_field(config, v.field->config_field);
    TANDEM_REQUIRE(field != nullptr, std::string(v.token->keyword) + " names ncclConfig_t." +
                                         std::string(v.field->config_field) + ", which this build's nccl.h lacks");
    *field = v.value;
  }
  // A bound of the program's own that contradicts the policy's moves to it: the policy's bound wins
  // (minCTAs 32 under nccl-ctas:..4 becomes 4..4; maxCTAs 2 under nccl-ctas:8.. becomes 8..8). NCCL
  // would otherwise get min > max, which it resolves its own, undocumented way.
  const bool both_set = config.minCTAs != NCCL_CONFIG_UNDEF_INT && config.maxCTAs != NCCL_CONFIG_UNDEF_INT;
  if (both_set && config.minCTAs > config.maxCTAs) {
    if (policy.nccl_max_ctas && !policy.nccl_min_ctas)
      config.minCTAs = config.maxCTAs;
    else if (policy.nccl_min_ctas && !policy.nccl_max_ctas)
      config.maxCTAs = config.minCTAs;
  }
}

std::string nccl_settings_key(const OverlapPolicy& policy) {
  std::string key;
  for (const NcclFieldValue& v : nccl_field_values(policy))
    key += std::string(v.field->config_field) + "=" + std::to_string(v.value) + ";";
  if (policy.registers_windows()) key += policy.copy_engine ? "ce" : "win";
  return key;
}

}  // namespace tandem
