// The dlsym hook: how launches from libraries that link the CUDA runtime
// statically (cuBLAS, NCCL, PyTorch's extensions, any nvcc-built program) are
// reached. Their runtime dlopen()s libcuda and asks dlsym for
// "cuGetProcAddress_v2" (or "cuGetProcAddress"); handing back our wrapper makes
// every driver entry point they resolve afterwards pass through
// resolver_hooks.cpp.
//
// The contract (docs/RUN.md): dlsym answers exactly as without the interposer,
// except that a hooked name whose real definition exists yields our wrapper
// (RTLD_NEXT: always the real definition, as another interposer chaining to the
// next one expects). "Exactly" includes dlerror(): a message after a failed
// lookup (naming the object glibc would name), none after a successful one.
//
// glibc's dlsym looks at its caller's return address: RTLD_DEFAULT searches the
// caller's scope, RTLD_NEXT starts after the caller's object, dlerror() names
// the caller. So the exported entry is a few instructions of assembly that ask
// tandem_dlsym_route() where to go and then *jump* there with the caller's
// arguments and return address untouched: to glibc's dlsym for every name we do
// not hook (and for RTLD_NEXT lookups from objects after this library, which
// cannot see our wrappers), to tandem_dlsym_hook() otherwise, which finds the
// caller from its own return address.
#include <dlfcn.h>
#include <link.h>

#include <cerrno>

#include "dl_error.h"
#include "real_symbols.h"

namespace tandem::preload {
namespace {

link_map* object_containing(const void* address) {
  Dl_info info{};
  link_map* map = nullptr;
  if (dladdr1(address, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0) return nullptr;
  return map;
}

link_map* own_object() {
  static link_map* const self = object_containing(reinterpret_cast<const void*>(&own_object));
  return self;
}

// glibc attributes an address outside every object to the program
// (_dl_sym_find_caller_link_map).
link_map* caller_object(const void* caller) {
  link_map* map = object_containing(caller);
  if (map) return map;
  map = own_object();
  while (map && map->l_prev) map = map->l_prev;
  return map;
}

bool is_program(const link_map* map) { return map && !map->l_prev; }

// Whether `map` comes before this library in the load order: only the program
// and the libraries preloaded before us, all loaded at start and never
// unloaded, so walking back is safe.
bool precedes_us(const link_map* map) {
  for (const link_map* l = own_object() ? own_object()->l_prev : nullptr; l; l = l->l_prev)
    if (l == map) return true;
  return false;
}

// The object name glibc's messages use: the program is named by argv[0]
// (DSO_FILENAME in glibc).
const char* name_in_messages(const link_map* map) {
  if (map && map->l_name && map->l_name[0]) return map->l_name;
  return program_invocation_name && program_invocation_name[0] ? program_invocation_name : "<main program>";
}

// What glibc's dlsym answers without this library, and how to leave dlerror()
// as it would.
struct Answer {
  void* found = nullptr;
  // When nothing is found: the handle whose lookup fails exactly as glibc's
  // would (dlerror() then needs no rewrite), or nullptr and the object whose
  // name the message must carry.
  void* failing_handle = nullptr;
  const link_map* named_in_error = nullptr;
};

// The next definition after this library: the global scope minus us (we are
// preloaded right after the program; the program's own definition, if any, is
// found before ours and returned as is).
void* next_after_us(const char* name) { return real_dlsym()(RTLD_NEXT, name); }

Answer answer_without_us(void* handle, const char* name, const void* caller) {
  Answer a;
  if (handle == RTLD_NEXT) {  // only from objects before us (routes_to_hook)
    a.found = next_after_us(name);
    a.named_in_error = caller_object(caller);
    return a;
  }
  if (handle == RTLD_DEFAULT) {
    void* first = real_dlsym()(RTLD_DEFAULT, name);
    if (first && !is_own_hook(first)) {
      a.found = first;
      return a;
    }
    a.found = next_after_us(name);
    link_map* caller_map = caller_object(caller);
    a.named_in_error = caller_map;
    // A library loaded with RTLD_LOCAL also sees its own dependencies (its local scope, searched
    // after the global one). A link_map is not always a usable handle: an object loaded as another's
    // dependency has no search list of its own until it is dlopen()ed (glibc then crashes on it), so
    // take a real handle with RTLD_NOLOAD, which loads nothing and leaves the object loaded after
    // dlclose. The failure, if any, is then reported as glibc would, naming the caller.
    if (!a.found && caller_map && !is_program(caller_map) && !precedes_us(caller_map) && caller_map != own_object() &&
        caller_map->l_name && caller_map->l_name[0]) {
      if (void* caller_handle = dlopen(caller_map->l_name, RTLD_LAZY | RTLD_NOLOAD)) {
        a.found = real_dlsym()(caller_handle, name);
        dlclose(caller_handle);
      }
    }
    return a;
  }
  // A handle: glibc searches that object's scope, whoever calls. Only the
  // program's handle (dlopen(NULL)) has this library in its scope.
  void* found = real_dlsym()(handle, name);
  // Null without an error: glibc found this library's export, whose resolver answered that nothing
  // else defines the name (symbol_presence.h). The error glibc would report is settled below.
  const bool found_ours_absent = !found && real_dlerror()() == nullptr;
  if (!is_own_hook(found) && !found_ours_absent) {
    a.found = found;
    if (!found) a.failing_handle = handle;
    return a;
  }
  a.found = next_after_us(name);
  a.named_in_error = static_cast<const link_map*>(handle);
  return a;
}

// Leaves glibc's error state as the caller's lookup would have: cleared after a
// success (any successful lookup does that), the failure's message otherwise.
void settle_dl_error(const Answer& a, const char* name, bool found) {
  if (found) {
    (void)real_dlsym()(RTLD_DEFAULT,
                       "dlsym");  // always succeeds: this library exports it
  } else if (a.failing_handle) {
    (void)real_dlsym()(a.failing_handle, name);
  } else {
    (void)next_after_us(name);  // fails, naming this library: dlerror() renames it
    arm_dl_error_rewrite(name_in_messages(a.named_in_error), name);
  }
}

// RTLD_NEXT from an object after us is exact in glibc itself (it cannot return
// our wrappers, and must return the real definition).
bool routes_to_hook(void* handle, const char* name, const void* caller) {
  if (!hook_named(name)) return false;
  if (handle != RTLD_NEXT) return true;
  const link_map* map = caller_object(caller);
  return is_program(map) || precedes_us(map);
}

}  // namespace
}  // namespace tandem::preload

extern "C" {

// Jumped to (not called) for a hooked name: our return address is the caller's.
__attribute__((visibility("hidden"), noinline)) void* tandem_dlsym_hook(void* handle, const char* name) {
  using namespace tandem::preload;
  const int saved_errno = errno;
  const void* caller = __builtin_return_address(0);
  const Answer answer = answer_without_us(handle, name, caller);
  void* result = answer.found;
  if (result && handle != RTLD_NEXT) result = adopt_real(*hook_named(name), result);
  settle_dl_error(answer, name, result != nullptr);
  errno = saved_errno;
  return result;
}

// Where the assembly entry jumps: glibc's dlsym, or tandem_dlsym_hook. Uses no
// lock and nothing that needs this library's constructors, so it is safe
// however early dlsym is called.
__attribute__((visibility("hidden"))) void* tandem_dlsym_route(void* handle, const char* name, const void* caller) {
  using namespace tandem::preload;
  const int saved_errno = errno;
  void* target = routes_to_hook(handle, name, caller) ? reinterpret_cast<void*>(&tandem_dlsym_hook)
                                                      : reinterpret_cast<void*>(real_dlsym());
  errno = saved_errno;
  return target;
}

}  // extern "C"

#if defined(__x86_64__)
// dlsym(handle=%rdi, name=%rsi): save the two arguments, ask the router with
// the caller's return address as the third (keeping the stack 16-byte aligned
// for the call: entry %rsp is 8 mod 16, two pushes keep it 8 mod 16, the sub
// makes it 0; the return address is then at 24(%rsp)), restore them and
// tail-jump, so the target sees our caller's return address.
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
    "  movq 24(%rsp), %rdx\n"
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
// Other architectures: a plain C++ hook. RTLD_NEXT lookups, RTLD_DEFAULT's
// scope and dependency tracking are then relative to this library rather than
// the caller (see the comment at the top).
extern "C" __attribute__((visibility("default"))) void* dlsym(void* handle, const char* name) {
  using Fn = void* (*)(void*, const char*);
  return reinterpret_cast<Fn>(tandem_dlsym_route(handle, name, __builtin_return_address(0)))(handle, name);
}
#endif
