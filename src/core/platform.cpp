// Which platform this build targets: TANDEM_HIP is defined on tandem::core by the HIP build only
// (cmake/HipBuild.cmake), so the pure C++ core needs no GPU header to know it.
#include "tandem/platform.h"

#include "tandem/enum_table.h"

namespace tandem {

Platform build_platform() {
#if defined(TANDEM_HIP)
  return Platform::Hip;
#else
  return Platform::Cuda;
#endif
}

const char* to_string(Platform platform) {
  // In the enum's order.
  static constexpr const char* kNames[] = {"CUDA", "HIP"};
  static_assert(covers(kNames, Platform::Hip), "one name per Platform");
  return table_entry(kNames, platform);
}

}  // namespace tandem
