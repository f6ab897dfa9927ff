#pragma once
// The real definitions behind the hooks, and the real dlsym.
//
// Every hook keeps one slot holding the real function it forwards to. A slot is filled by whichever
// comes first: the dlsym or cuGetProcAddress hook handing our wrapper to a caller (it stores what
// the real resolver returned), or a direct call of our exported symbol by a program linked against
// libcuda/libcublas (it looks up the next definition after this library, RTLD_NEXT).
#include <atomic>
#include <optional>
#include <string>

#include "dl_error.h"
#include "hooked_symbols.h"

namespace tandem::preload {

using DlsymFn = void* (*)(void* handle, const char* name);

// glibc's own dlsym, found with dlvsym so that this library's exported dlsym is not returned. Never
// null (a stand-in returning nullptr if glibc had none, which cannot happen with glibc).
DlsymFn real_dlsym();
// `fn` = the function `name` of the object `handle`, through the real dlsym; whether it was found.
// The C ABIs of the libraries the interposer dlopen()s are bound so, from their lists of functions.
template <class Fn>
bool bind_function(void* handle, Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(real_dlsym()(handle, name));
  return fn != nullptr;
}
// glibc's own dlerror. Resolved when this library is loaded: resolving it later (dlvsym) would clear
// the very error state the caller of dlerror() wants to read.
DlerrorFn real_dlerror();

// The real function behind hook `h`, or nullptr if there is none in the process.
void* real_address(Hook h);

// The address of this library's exported wrapper for `h` (defined with the wrappers, exports.cpp).
const void* hook_address(Hook h);
bool is_own_hook(const void* address);

// Given what a real resolver returned for hook `h`, returns what the caller must get: our wrapper
// (after storing `real` in the slot), or `real` itself when our wrapper could not forward to it
// (a second copy of a library). nullptr stays nullptr.
void* adopt_real(Hook h, void* real);

// The hook with exactly this symbol name.
std::optional<Hook> hook_named(const char* name);

// `symbol` from the very library that defines `sibling` (dladdr, then dlopen RTLD_NOLOAD of that
// file: never loads anything), so that a helper function comes from the same copy as the real
// function it goes with, never from a second copy of the library. nullptr if absent.
void* symbol_beside(const void* sibling, const char* symbol);

// symbol_beside the real function of `h`, looked up once into `cache` (racing threads find the same).
template <class Fn>
Fn function_beside(std::atomic<void*>& cache, Hook h, const char* symbol) {
  void* fn = cache.load(std::memory_order_acquire);
  if (!fn) {
    fn = symbol_beside(real_address(h), symbol);
    cache.store(fn, std::memory_order_release);
  }
  return reinterpret_cast<Fn>(fn);
}

// The file of the loaded object that holds `address`; "" for none.
std::string file_of(const void* address);
// This library's own file, and its folder: the libraries it loads are installed beside it.
std::string own_file();
std::string own_folder();
// dlerror()'s message after a failed dl call of ours, read so that it is cleared: the program's next
// dlerror() must not read our failure.
std::string take_dl_error();

// The loaded libcuda, for internal driver calls (dlopen with RTLD_NOLOAD); nullptr if not loaded.
void* loaded_libcuda();

}  // namespace tandem::preload
