// The policy grammar (parse_policy, parse_policy_list): no input crashes or
// hangs, every error is a tandem::Error, and every accepted policy survives the
// round trip through its canonical text.
// '@FILE' is left to fuzz_policy_file: here a mutated '@/dev/zero' would read
// the machine's files.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "policy_round_trip.h"
#include "tandem/error.h"
#include "tandem/policy.h"

using tandem_fuzz::check_policy_round_trip;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = tandem_fuzz::text_of(data, size);
  if (text.find('@') != std::string::npos) return -1;  // not added to the corpus

  bool single_accepted = false;
  tandem::OverlapPolicy single;
  try {
    single = tandem::parse_policy(text);
    single_accepted = true;
    check_policy_round_trip(single, text);
  } catch (const tandem::Error&) {
  }

  try {
    const std::vector<tandem::OverlapPolicy> list = tandem::parse_policy_list(text);
    FUZZ_CHECK(!list.empty(), "an accepted list holds a policy: '" + text + "'");
    for (const tandem::OverlapPolicy& policy : list) check_policy_round_trip(policy, text);
    // A single policy is a list of one.
    if (single_accepted) FUZZ_CHECK(list.size() == 1 && list.front() == single, "'" + text + "' as a list");
  } catch (const tandem::Error&) {
    FUZZ_CHECK(!single_accepted, "a policy accepted alone is accepted as a list: '" + text + "'");
  }
  return 0;
}
