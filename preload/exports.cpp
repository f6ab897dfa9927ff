// The exported hook symbols, generated from the hook list (hook_list.h): each only forwards to its
// handler. These, dlsym (dlsym_hook.cpp) and dlerror (dl_error.cpp) are the library's only exports; the
// version script made from the same list (version_script.in) keeps everything else local.
//
// Each symbol is defined in C++ as tandem_hook_<name> (hidden) and exported as an indirect function
// whose assembler name is exactly <name>. The C++ names never collide with the declarations in <cuda.h>,
// and addresses taken inside the library (hook_address) resolve to our definitions even if another
// object earlier in the search order defines the same names.
#include <cerrno>

#include "errno_for_caller.h"
#include "hook_handlers.h"
#include "symbol_presence.h"

#define TANDEM_HOOK_EXPORT __attribute__((visibility("default")))

namespace {
// A hook's own work (lookups, the first launch's metadata, log lines) must not show in errno: the
// caller sees what it would see without us (errno_for_caller.h).
struct ErrnoKept {
  int saved = errno;
  ~ErrnoKept() { errno = ::tandem::preload::errno_for_caller(saved); }
};

// Set by a hook right after its real call; one per thread. A hook reached from inside another
// hook's real call (NCCL's kernel launches pass through the launch hooks) takes its own value first
// and forgets it, so the outer hook's value, recorded after, is the one its wrapper sees.
thread_local bool t_real_errno_recorded = false;
thread_local int t_real_errno = 0;
}  // namespace

namespace tandem::preload {
void keep_errno_of_real_call() {
  t_real_errno = errno;
  t_real_errno_recorded = true;
}
int errno_for_caller(int at_entry) {
  if (!t_real_errno_recorded) return at_entry;
  t_real_errno_recorded = false;
  return t_real_errno;
}
}  // namespace tandem::preload

// The export is an indirect function (symbol_presence.h): its resolver, run by the loader when it
// binds a reference, hands out the hook, or null where no other object defines the function, so
// that a weak reference to an absent library stays null as without the interposer.
#define TANDEM_DEFINE_EXPORT(name, ret, params, args)                                                      \
  extern "C" __attribute__((visibility("hidden"))) ret tandem_hook_##name params {                         \
    const ErrnoKept kept;                                                                                  \
    return ::tandem::preload::handle_##name args;                                                          \
  }                                                                                                        \
  extern "C" __attribute__((visibility("hidden"))) decltype(&tandem_hook_##name) tandem_resolve_##name() { \
    return reinterpret_cast<decltype(&tandem_hook_##name)>(                                                \
        ::tandem::preload::export_target(#name, reinterpret_cast<void*>(&tandem_hook_##name)));            \
  }                                                                                                        \
  extern "C" TANDEM_HOOK_EXPORT ret tandem_export_##name params __asm__(#name)                             \
      __attribute__((ifunc("tandem_resolve_" #name)));
// libc's exits are defined in every process (by libc): no weak probe can find them absent, so they are
// plain exports, an alias of the hook. An indirect one would make glibc print "Relink `LIB' with
// `libtandem_preload.so' for IFUNC symbol `_exit'" for every library loaded at start-up with immediate
// binding that calls _exit (libmount, libdbus, glib: most of a distribution's), whose reference the
// loader binds before the interposer is relocated.
#define TANDEM_DEFINE_PLAIN_EXPORT(name, ret, params, args)                        \
  extern "C" __attribute__((visibility("hidden"))) ret tandem_hook_##name params { \
    const ErrnoKept kept;                                                          \
    return ::tandem::preload::handle_##name args;                                  \
  }                                                                                \
  extern "C" TANDEM_HOOK_EXPORT ret tandem_export_##name params __asm__(#name)     \
      __attribute__((alias("tandem_hook_" #name)));
// TANDEM_LIBRARY_HOOKS, group by group (kHookAddresses below has one entry per hook of the list).
TANDEM_DRIVER_HOOKS(TANDEM_DEFINE_EXPORT)
TANDEM_CUBLAS_HOOKS(TANDEM_DEFINE_EXPORT)
TANDEM_CUPTI_HOOKS(TANDEM_DEFINE_EXPORT)
TANDEM_EXIT_HOOKS(TANDEM_DEFINE_PLAIN_EXPORT)
TANDEM_NCCL_HOOKS(TANDEM_DEFINE_EXPORT)
#undef TANDEM_DEFINE_PLAIN_EXPORT
#undef TANDEM_DEFINE_EXPORT

namespace tandem::preload {

#define TANDEM_EXPORT_ADDRESS(name, ret, params, args) reinterpret_cast<const void*>(&tandem_hook_##name),
static const void* const kHookAddresses[] = {TANDEM_DRIVER_HOOKS(TANDEM_EXPORT_ADDRESS)
                                                 TANDEM_LIBRARY_HOOKS(TANDEM_EXPORT_ADDRESS)};
static_assert(sizeof(kHookAddresses) / sizeof(kHookAddresses[0]) == kHookCount, "one address per hook");
#undef TANDEM_EXPORT_ADDRESS

const void* hook_address(Hook h) { return kHookAddresses[index_of(h)]; }

}  // namespace tandem::preload
