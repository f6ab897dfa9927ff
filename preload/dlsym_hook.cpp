// The dlsym hook: how launches from libraries that link the CUDA runtime statically (cuBLAS, NCCL,
// PyTorch's extensions, any nvcc-built program) are reached. Their runtime dlopen()s libcuda and
// asks dlsym for "cuGetProcAddress_v2" (or "cuGetProcAddress"); handing back our wrapper makes every
// driver entry point they resolve afterwards pass through resolver_hooks.cpp.
//
// glibc's dlsym looks at its caller's return address: RTLD_NEXT means "after the caller's object",
// and the caller's object gets a dependency on the object the symbol came from. A C++ hook that
// calls the real dlsym would make *this* library the caller and, for RTLD_NEXT, return the wrong
// definition (another interposer after us could even get its own symbol back and recurse). So the
// exported entry is a few instructions of assembly that ask tandem_dlsym_route() where to go and
// then *jump* there with the caller's arguments and return address untouched: to glibc's dlsym
// for every name we do not hook (and for every RTLD_NEXT lookup), to tandem_dlsym_hook() for ours.
#include <dlfcn.h>

#include "real_symbols.h"

namespace tandem::preload {
namespace {

bool routes_to_hook(void* handle, const char* name) {
  // RTLD_NEXT lookups are other interposers chaining to the next definition: leave them exact.
  return handle != RTLD_NEXT && hook_named(name).has_value();
}

}  // namespace
}  // namespace tandem::preload

extern "C" {

// Called by the hook with the real dlsym's result for one of our names.
__attribute__((visibility("hidden"))) void* tandem_dlsym_hook(void* handle, const char* name) {
  using namespace tandem::preload;
  const Hook hook = *hook_named(name);
  void* real = real_dlsym()(handle, name);
  if (is_own_hook(real)) {
    // dlsym(RTLD_DEFAULT, ...) finds our own export first (LD_PRELOAD puts us first). Keep "absent"
    // meaning absent: hand our wrapper out only if the real library is there behind it.
    return real_address(hook) ? real : nullptr;
  }
  return adopt_real(hook, real);
}

// Where the assembly entry jumps: glibc's dlsym, or tandem_dlsym_hook. Uses no lock and nothing
// that needs this library's constructors, so it is safe however early dlsym is called.
__attribute__((visibility("hidden"))) void* tandem_dlsym_route(void* handle, const char* name) {
  using namespace tandem::preload;
  if (routes_to_hook(handle, name)) return reinterpret_cast<void*>(&tandem_dlsym_hook);
  return reinterpret_cast<void*>(real_dlsym());
}

}  // extern "C"

#if defined(__x86_64__)
// dlsym(handle=%rdi, name=%rsi): save the two arguments, ask the router (keeping the stack 16-byte
// aligned for the call: entry %rsp is 8 mod 16, two pushes keep it 8 mod 16, the sub makes it 0),
// restore them and tail-jump, so the target sees our caller's return address.
__asm__(
    ".text\n"
    ".globl dlsym\n"
    ".type dlsym, @function\n"
    ".p2align 4\n"
    "dlsym:\n"
    "  .cfi_startproc\n"
    "  endbr64\n"
    "  pushq %rdi\n"
    "  .cfi_adjust_cfa_offset 8\n"
    "  pushq %rsi\n"
    "  .cfi_adjust_cfa_offset 8\n"
    "  subq $8, %rsp\n"
    "  .cfi_adjust_cfa_offset 8\n"
    "  call tandem_dlsym_route\n"
    "  addq $8, %rsp\n"
    "  .cfi_adjust_cfa_offset -8\n"
    "  popq %rsi\n"
    "  .cfi_adjust_cfa_offset -8\n"
    "  popq %rdi\n"
    "  .cfi_adjust_cfa_offset -8\n"
    "  jmp *%rax\n"
    "  .cfi_endproc\n"
    ".size dlsym, .-dlsym\n");
#else
// Other architectures: a plain C++ hook. RTLD_NEXT lookups and dependency tracking are then relative
// to this library rather than the caller (see the comment at the top).
extern "C" __attribute__((visibility("default"))) void* dlsym(void* handle, const char* name) {
  using Fn = void* (*)(void*, const char*);
  return reinterpret_cast<Fn>(tandem_dlsym_route(handle, name))(handle, name);
}
#endif
