#include "harness/collective.h"

#include "tandem/error.h"

namespace tandem::bench {

void check_divisible(const Collective& collective, uint64_t bytes, DType dtype, int nranks) {
  const uint64_t unit = dtype_size(dtype) * static_cast<uint64_t>(collective.shards(nranks));
  if (bytes == 0 || bytes % unit != 0)
    TANDEM_THROW(std::string(collective.name()) + ": size " + std::to_string(bytes) + " B is not divisible by " +
                 std::to_string(collective.shards(nranks)) + " rank(s) x " + std::to_string(dtype_size(dtype)) +
                 " B (" + to_string(dtype) + ")");
}

}  // namespace tandem::bench
