#pragma once
// The policy text's promise (include/tandem/policy.h):
// parse_policy(to_string(p)) == p, and the canonical text is a fixed point:
// to_string(parse_policy(to_string(p))) == to_string(p).
#include <string>

#include "fuzz_common.h"
#include "tandem/error.h"
#include "tandem/policy.h"

namespace tandem_fuzz {

inline void check_policy_round_trip(const tandem::OverlapPolicy& policy, const std::string& input) {
  const std::string canonical = tandem::to_string(policy);
  tandem::OverlapPolicy back;
  try {
    back = tandem::parse_policy(canonical);
  } catch (const tandem::Error& error) {
    invariant_broken("the canonical text of an accepted policy parses",
                     "input '" + input + "' -> '" + canonical + "': " + error.what());
  }
  FUZZ_CHECK(back == policy, "input '" + input + "' -> '" + canonical + "' -> '" + tandem::to_string(back) + "'");
  FUZZ_CHECK(tandem::to_string(back) == canonical,
             "input '" + input + "' -> '" + canonical + "' -> '" + tandem::to_string(back) + "'");
}

}  // namespace tandem_fuzz
