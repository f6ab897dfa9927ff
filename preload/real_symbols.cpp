#include "real_symbols.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

namespace tandem::preload {
namespace {

void* dlsym_unavailable(void*, const char*) { return nullptr; }
char* dlerror_unavailable() { return nullptr; }

// Zero-initialised at load time (constant initialisation), so the hooks work even if they are
// called before this library's constructors run.
std::atomic<DlsymFn> g_real_dlsym{nullptr};
std::atomic<DlerrorFn> g_real_dlerror{nullptr};
std::atomic<void*> g_real[kHookCount];

// The next definition of `h` after this library in the global search order; for driver symbols,
// falls back to the loaded libcuda (a program that dlopen'ed libcuda RTLD_LOCAL and then calls our
// exported symbol directly). Never returns one of our own wrappers.
// A library loaded RTLD_LOCAL (Python loads extension modules so, and with them the cuBLAS a
// framework links) is not in the global scope RTLD_NEXT searches, yet the program calls our exported
// symbol through it. Search every loaded object for a definition instead; the first in load order
// wins, which is the copy the dynamic linker bound the caller's dependency to in the usual case of
// one copy per process.
// Names of the loaded objects, in load order. Collected first and looked up after
// dl_iterate_phdr returns: it holds the loader's list lock while calling back, and a dlopen from the
// callback would take the loader's main lock after it, the reverse of dlopen's own order. (The dl*
// calls here change dlerror()'s state; the dlsym hook settles it last, see dlsym_hook.cpp.)
int collect_object_name(dl_phdr_info* info, size_t, void* data) {
  if (info->dlpi_name && *info->dlpi_name) static_cast<std::vector<std::string>*>(data)->emplace_back(info->dlpi_name);
  return 0;
}

void* search_loaded_objects(const char* symbol) {
  std::vector<std::string> names;
  try {
    dl_iterate_phdr(&collect_object_name, &names);
  } catch (...) {
    return nullptr;
  }
  for (const auto& name : names) {
    void* handle = dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (!handle) continue;
    void* candidate = real_dlsym()(handle, symbol);
    dlclose(handle);  // balances the reference RTLD_NOLOAD took; the object stays loaded
    if (candidate && !is_own_hook(candidate)) return candidate;
  }
  return nullptr;
}

void* lookup_next_definition(Hook h) {
  void* found = real_dlsym()(RTLD_NEXT, name_of(h));
  if (!found && family_of(h) == HookFamily::Driver) {
    if (void* libcuda = loaded_libcuda()) found = real_dlsym()(libcuda, name_of(h));
  }
  if ((!found || is_own_hook(found)) && family_of(h) != HookFamily::Driver) {
    found = search_loaded_objects(name_of(h));
  }
  return is_own_hook(found) ? nullptr : found;
}

// glibc's own `name`, once: RTLD_NEXT is relative to the caller of dlvsym, i.e. this library, so the
// next definition is glibc's. glibc >= 2.34 defines name@@GLIBC_2.34 in libc; older ones only
// name@GLIBC_2.2.5 (libdl). Racing threads compute the same value; last store wins harmlessly.
template <class Fn>
Fn glibc_entry(std::atomic<Fn>& cache, const char* name, Fn unavailable) {
  Fn fn = cache.load(std::memory_order_acquire);
  if (fn) return fn;
  void* found = dlvsym(RTLD_NEXT, name, "GLIBC_2.34");
  if (!found) found = dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");
  fn = found ? reinterpret_cast<Fn>(found) : unavailable;
  cache.store(fn, std::memory_order_release);
  return fn;
}

}  // namespace

DlsymFn real_dlsym() { return glibc_entry(g_real_dlsym, "dlsym", &dlsym_unavailable); }

DlerrorFn real_dlerror() { return glibc_entry(g_real_dlerror, "dlerror", &dlerror_unavailable); }

namespace {
// The only work done at load time: two pointers, before the program can have an error pending.
__attribute__((constructor)) void resolve_glibc_entry_points() {
  real_dlsym();
  real_dlerror();
}
}  // namespace

void* real_address(Hook h) {
  std::atomic<void*>& slot = g_real[index_of(h)];
  void* real = slot.load(std::memory_order_acquire);
  if (real) return real;
  void* next = lookup_next_definition(h);
  if (!next) return nullptr;
  // Keep whatever another thread (or a resolver hook) stored first.
  if (slot.compare_exchange_strong(real, next, std::memory_order_acq_rel)) return next;
  return real;
}

bool is_own_hook(const void* address) {
  if (!address) return false;
  for (int i = 0; i < kHookCount; ++i)
    if (hook_address(static_cast<Hook>(i)) == address) return true;
  return false;
}

void* adopt_real(Hook h, void* real) {
  if (!real || is_own_hook(real)) return real;
  std::atomic<void*>& slot = g_real[index_of(h)];
  void* wrapper = const_cast<void*>(hook_address(h));
  if (family_of(h) == HookFamily::Library) {
    // Our exported wrapper also serves direct (PLT) callers, which mean the globally visible copy.
    // Adopt only that copy; hand any other copy back unwrapped.
    void* global = real_address(h);
    if (!global) {
      void* expected = nullptr;
      if (slot.compare_exchange_strong(expected, real, std::memory_order_acq_rel) || expected == real) return wrapper;
      return real;
    }
    return global == real ? wrapper : real;
  }
  // One libcuda per process: any real pointer for this slot is the same driver entry point, so the
  // first one stored serves every caller.
  void* expected = nullptr;
  slot.compare_exchange_strong(expected, real, std::memory_order_acq_rel);
  return wrapper;
}

std::optional<Hook> hook_named(const char* name) {
  // Every hook starts with "cu" or "nccl": most names a program looks up are rejected here.
  if (!name || !((name[0] == 'c' && name[1] == 'u') || std::strncmp(name, "nccl", 4) == 0)) return std::nullopt;
  for (int i = 0; i < kHookCount; ++i)
    if (std::strcmp(kHookNames[i], name) == 0) return static_cast<Hook>(i);
  return std::nullopt;
}

void* symbol_beside(const void* sibling, const char* symbol) {
  Dl_info info{};
  if (!sibling || dladdr(sibling, &info) == 0 || !info.dli_fname) return nullptr;
  void* library = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (!library) return nullptr;
  void* found = real_dlsym()(library, symbol);
  dlclose(library);  // drops only the reference RTLD_NOLOAD added
  return found;
}

std::string file_of(const void* address) {
  Dl_info info{};
  if (!address || !dladdr(address, &info) || !info.dli_fname) return "";
  return info.dli_fname;
}

std::string own_file() { return file_of(reinterpret_cast<const void*>(&own_file)); }

std::string own_folder() {
  const std::string file = own_file();
  const size_t slash = file.rfind('/');
  return slash == std::string::npos ? "." : file.substr(0, slash);
}

std::string take_dl_error() {
  const char* error = real_dlerror()();
  return error ? error : "unknown error";
}

void* loaded_libcuda() {
  static std::atomic<void*> handle{nullptr};
  void* h = handle.load(std::memory_order_acquire);
  if (h) return h;
  // RTLD_NOLOAD: never load the driver into a process that has not loaded it itself.
  h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (h) handle.store(h, std::memory_order_release);
  return h;
}

}  // namespace tandem::preload
