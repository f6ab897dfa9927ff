#pragma once
// The hook list (tandem/hook_list.h) as C++: an enum of the hooks, their names and families.
// Includes no CUDA header, so the statistics and the CPU tests can use it.
#include "tandem/run_contract.h"

namespace tandem::preload {

#define TANDEM_HOOK_ENUMERATOR(name, ret, params, args) name,
enum class Hook : int { TANDEM_DRIVER_HOOKS(TANDEM_HOOK_ENUMERATOR) TANDEM_LIBRARY_HOOKS(TANDEM_HOOK_ENUMERATOR) };
#undef TANDEM_HOOK_ENUMERATOR

#define TANDEM_HOOK_COUNT_ONE(name, ret, params, args) +1
inline constexpr int kDriverHookCount = 0 TANDEM_DRIVER_HOOKS(TANDEM_HOOK_COUNT_ONE);
inline constexpr int kHookCount = kDriverHookCount + (0 TANDEM_LIBRARY_HOOKS(TANDEM_HOOK_COUNT_ONE));
#undef TANDEM_HOOK_COUNT_ONE

static_assert(sizeof(kHookNames) / sizeof(kHookNames[0]) == kHookCount, "one name per hook");

enum class HookFamily { Driver, Library };

constexpr int index_of(Hook h) { return static_cast<int>(h); }
constexpr const char* name_of(Hook h) { return kHookNames[index_of(h)]; }
// The driver list comes first in the enum.
constexpr HookFamily family_of(Hook h) {
  return index_of(h) < kDriverHookCount ? HookFamily::Driver : HookFamily::Library;
}

// The launch entry points: the ones whose calls are kernel launches.
constexpr bool is_launch_hook(Hook h) {
  return h == Hook::cuLaunchKernel || h == Hook::cuLaunchKernel_ptsz || h == Hook::cuLaunchKernelEx ||
         h == Hook::cuLaunchKernelEx_ptsz || h == Hook::cuLaunchCooperativeKernel ||
         h == Hook::cuLaunchCooperativeKernel_ptsz;
}

}  // namespace tandem::preload
