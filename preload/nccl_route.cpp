#include "nccl_route.h"

#include "stats.h"

namespace tandem::preload {

uint64_t collective_bytes(Collective kind, uint64_t count, int nranks, uint64_t element_bytes) {
  // size_elements is count times 1 or nranks: that factor, then the products, saturating (stats.h) so
  // that a count no buffer has (SIZE_MAX) does not wrap into a small total.
  return saturating_product(saturating_product(count, size_elements(kind, 1, nranks)), element_bytes);
}

}  // namespace tandem::preload
