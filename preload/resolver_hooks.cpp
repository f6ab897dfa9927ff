// cuGetProcAddress / cuGetProcAddress_v2: how the CUDA runtime (static or shared), and anything that
// uses cudaGetDriverEntryPoint[ByVersion] (NCCL, cuBLAS, PyTorch), obtains every driver entry point.
// The real resolver is always called first, with the caller's version and flags unchanged; when it
// returns one of the hooked symbols, the caller gets our wrapper and the wrapper's slot keeps the
// pointer the driver chose (so the caller's version and stream flavour are exactly preserved).
#include <cstring>

#include "hook_handlers.h"
#include "runtime.h"

namespace tandem::preload {
namespace {

// The hook serving a resolver request, if any. Requests name the base symbol ("cuLaunchKernel");
// CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM selects its _ptsz twin. "cuGetProcAddress" itself
// resolves to the 5-argument ABI from CUDA 12.0 and to the 4-argument one before.
std::optional<Hook> hook_for_request(const char* symbol, int cuda_version, cuuint64_t flags) {
  if (!symbol) return std::nullopt;
  if (std::strcmp(symbol, "cuGetProcAddress") == 0)
    return cuda_version >= 12000 ? Hook::cuGetProcAddress_v2 : Hook::cuGetProcAddress;
  if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
    const size_t length = std::strlen(symbol);
    for (int i = 0; i < kDriverHookCount; ++i) {
      const char* name = kHookNames[i];
      if (std::strncmp(name, symbol, length) == 0 && std::strcmp(name + length, "_ptsz") == 0)
        return static_cast<Hook>(i);
    }
  }
  const auto hook = hook_named(symbol);
  if (hook && family_of(*hook) == HookFamily::Driver) return hook;
  return std::nullopt;
}

// Both resolvers: the real answer, with a hooked driver function's pointer replaced by our wrapper.
// `real_of` is looked up after the call is counted. `extra`: cuGetProcAddress_v2's symbol status.
template <class RealOf, class... Extra>
CUresult resolve(Hook via, RealOf real_of, const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                 Extra... extra) {
  Counters::bump(counters().calls_by_hook[index_of(via)]);
  const auto real = real_of();
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult result = real(symbol, pfn, cuda_version, flags, extra...);
  if (result != CUDA_SUCCESS || !pfn || !*pfn) return result;
  if (const auto hook = hook_for_request(symbol, cuda_version, flags)) *pfn = adopt_real(*hook, *pfn);
  return result;
}

}  // namespace

CUresult handle_cuGetProcAddress(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags) {
  return resolve(Hook::cuGetProcAddress, &real_cuGetProcAddress, symbol, pfn, cuda_version, flags);
}

CUresult handle_cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult* symbol_status) {
  return resolve(Hook::cuGetProcAddress_v2, &real_cuGetProcAddress_v2, symbol, pfn, cuda_version, flags, symbol_status);
}

}  // namespace tandem::preload
