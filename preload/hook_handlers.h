#pragma once
// Typed views of the hook list: a function-pointer type per hooked symbol (<name>_fn), the real
// pointer getter (real_<name>()) and the handler each exported wrapper forwards to
// (handle_<name>(), written by hand in launch_hooks.cpp, resolver_hooks.cpp, cublas_hooks.cpp and
// nccl_hooks.cpp).
#include <cublasLt.h>
#include <cublas_api.h>
#include <nccl.h>  // types only: the interposer never links NCCL

#include "cuda_driver.h"
#include "hooked_symbols.h"
#include "real_symbols.h"

namespace tandem::preload {

#define TANDEM_DECLARE_HOOK_TYPES(name, ret, params, args)                                         \
  using name##_fn = ret(*) params;                                                                 \
  inline name##_fn real_##name() { return reinterpret_cast<name##_fn>(real_address(Hook::name)); } \
  ret handle_##name params;
TANDEM_DRIVER_HOOKS(TANDEM_DECLARE_HOOK_TYPES)
TANDEM_LIBRARY_HOOKS(TANDEM_DECLARE_HOOK_TYPES)
#undef TANDEM_DECLARE_HOOK_TYPES

}  // namespace tandem::preload
