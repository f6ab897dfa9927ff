// The kernel footprint text (parse_footprint, as --kernel/--comm take it): no
// input crashes, every refusal is a tandem::Error, an accepted footprint obeys
// the documented bounds and survives the round trip
// parse_footprint(footprint_to_string(k)) == k with a stable canonical text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "tandem/error.h"
#include "tandem/footprint_text.h"

namespace {

bool same(const tandem::KernelFootprint& a, const tandem::KernelFootprint& b) {
  return a.name == b.name && a.threads_per_block == b.threads_per_block && a.regs_per_thread == b.regs_per_thread &&
         a.static_smem == b.static_smem && a.dynamic_smem == b.dynamic_smem && a.cluster_size == b.cluster_size;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = tandem_fuzz::text_of(data, size);
  tandem::KernelFootprint footprint;
  try {
    footprint = tandem::parse_footprint(text);
  } catch (const tandem::Error&) {
    return 0;
  }
  FUZZ_CHECK(footprint.threads_per_block >= 1 && footprint.regs_per_thread >= 0 && footprint.static_smem >= 0 &&
                 footprint.dynamic_smem >= 0 && footprint.cluster_size >= 1,
             "'" + text + "' -> '" + tandem::footprint_to_string(footprint) + "'");

  const std::string canonical = tandem::footprint_to_string(footprint);
  tandem::KernelFootprint back;
  try {
    back = tandem::parse_footprint(canonical);
  } catch (const tandem::Error& error) {
    tandem_fuzz::invariant_broken("the canonical text of an accepted footprint parses",
                                  "'" + text + "' -> '" + canonical + "': " + error.what());
  }
  FUZZ_CHECK(same(back, footprint),
             "'" + text + "' -> '" + canonical + "' -> '" + tandem::footprint_to_string(back) + "'");
  FUZZ_CHECK(tandem::footprint_to_string(back) == canonical, "'" + text + "' -> '" + canonical + "'");
  return 0;
}
