#pragma once
// Driver API entry points without linking libcuda: the binaries must start on machines with no
// driver (CI), so the driver is reached through the runtime's cudaGetDriverEntryPointByVersion.
#include <cuda.h>

namespace tandem::driver {

// Returns the entry point `symbol` of at least CUDA `version` (e.g. 12000); throws if absent.
void* entry_point(const char* symbol, unsigned version);

template <class Fn>
Fn get(const char* symbol, unsigned version) {
  return reinterpret_cast<Fn>(entry_point(symbol, version));
}

}  // namespace tandem::driver

// Declares `fn` as a lazily resolved pointer to the driver function `sym` of type PFN_sym.
#define TANDEM_DRIVER_FN(sym, version) \
  static const auto sym##_fn = ::tandem::driver::get<decltype(&::sym)>(#sym, version)
