// Prints what dlsym, dlvsym, dlerror and the driver's cuGetProcAddress answer
// for every symbol the interposer hooks (hook_list.h) and a few it does not,
// for every kind of handle, called from the program and from a library.
// test_preload_dlsym runs it with and without LD_PRELOAD of the interposer: the
// two outputs must be identical (docs/RUN.md: the interposer is invisible).
//
// Usage: dlsym_probe [local:PATH | global:PATH]...  Each argument dlopen()s a
// library (RTLD_LOCAL or RTLD_GLOBAL), then every lookup is printed again, so
// the answers are checked with nothing loaded, with a library loaded only
// locally, and with it in the global scope.
//
// Addresses differ between runs, so a found symbol prints as "found"; our
// wrapper standing in for a real definition is also "found", which is the
// contract (a wrapper only where the real one exists).
#include <dlfcn.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "preload/hooked_symbols.h"

extern "C" void* dlsym_probe_library_dlsym(void* handle, const char* name);
extern "C" void* dlsym_probe_library_dlvsym(void* handle, const char* name, const char* version);

namespace {

// From <cuda.h>, which cannot be included with the hook list (it renames
// cuGetProcAddress).
using CUresult = int;
using cuuint64_t = unsigned long long;
constexpr cuuint64_t kProcAddressDefault = 0;                  // CU_GET_PROC_ADDRESS_DEFAULT
constexpr cuuint64_t kProcAddressPerThreadStream = 1ULL << 1;  // CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

struct Handle {
  std::string label;
  void* handle;
};

struct Caller {
  const char* label;
  void* (*lookup)(void*, const char*);
  void* (*versioned_lookup)(void*, const char*, const char*);
};

// Called from the program's own code (this executable is the caller).
void* program_dlsym(void* handle, const char* name) { return dlsym(handle, name); }
void* program_dlvsym(void* handle, const char* name, const char* version) { return dlvsym(handle, name, version); }

std::vector<std::string> names_to_probe() {
  std::vector<std::string> names(std::begin(tandem::preload::kHookNames), std::end(tandem::preload::kHookNames));
  names.push_back("cuFuncGetAttribute");  // in the fake driver, not hooked
  names.push_back("cuInit");              // in neither
  names.push_back("tandem_probe_no_such_symbol");
  return names;
}

std::string text_or_null(const char* text) { return text ? text : "(null)"; }

// A failed lookup whose error is never read: the next lookup must replace it
// (success: no error).
void leave_a_stale_error() { (void)dlsym(RTLD_DEFAULT, "tandem_probe_stale_error"); }

void print_lookup(const std::string& what, void* found) {
  const int errno_after = errno;
  const std::string error = text_or_null(dlerror());
  const std::string error_again = text_or_null(dlerror());
  std::printf("%s -> %s errno=%d dlerror=%s again=%s\n", what.c_str(), found ? "found" : "NULL", errno_after,
              error.c_str(), error_again.c_str());
}

void probe_dlsym(const Caller& caller, const Handle& handle, const std::string& name) {
  leave_a_stale_error();
  errno = 4242;
  void* found = caller.lookup(handle.handle, name.c_str());
  print_lookup(std::string(caller.label) + " dlsym(" + handle.label + ", " + name + ")", found);
}

void probe_dlvsym(const Caller& caller, const Handle& handle, const std::string& name, const char* version) {
  leave_a_stale_error();
  errno = 4242;
  void* found = caller.versioned_lookup(handle.handle, name.c_str(), version);
  print_lookup(std::string(caller.label) + " dlvsym(" + handle.label + ", " + name + ", " + version + ")", found);
}

// The resolver of a loaded driver, asked for every name at both ABIs and both
// stream flavours.
void probe_resolver(const Handle& driver) {
  dlerror();
  const auto resolve = reinterpret_cast<CUresult (*)(const char*, void**, int, cuuint64_t, int*)>(
      dlsym(driver.handle, "cuGetProcAddress_v2"));
  if (!resolve) return;
  for (const auto& name : names_to_probe())
    for (int version : {11080, 12000, 13000})
      for (cuuint64_t flags : {kProcAddressDefault, kProcAddressPerThreadStream}) {
        void* pfn = reinterpret_cast<void*>(0x1);
        int status = -1;
        errno = 4242;
        const CUresult result = resolve(name.c_str(), &pfn, version, flags, &status);
        std::printf(
            "cuGetProcAddress_v2(%s, %s, %d, %llu) -> %d status=%d "
            "pfn=%s errno=%d\n",
            driver.label.c_str(), name.c_str(), version, flags, result, status, pfn ? "set" : "NULL", errno);
      }
}

void probe_everything(const std::vector<Handle>& handles) {
  const Caller callers[] = {{"program", &program_dlsym, &program_dlvsym},
                            {"library", &dlsym_probe_library_dlsym, &dlsym_probe_library_dlvsym}};
  for (const auto& caller : callers)
    for (const auto& handle : handles)
      for (const auto& name : names_to_probe()) {
        probe_dlsym(caller, handle, name);
        for (const char* version : {"GLIBC_2.2.5", "libcublas.so.13", "tandem_probe_version"})
          probe_dlvsym(caller, handle, name, version);
      }
  for (const auto& handle : handles) probe_resolver(handle);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Handle> handles = {{"RTLD_DEFAULT", RTLD_DEFAULT},
                                 {"RTLD_NEXT", RTLD_NEXT},
                                 {"program", dlopen(nullptr, RTLD_NOW)},
                                 {"libm", dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL)}};
  std::printf("== nothing loaded\n");
  probe_everything(handles);
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    const bool global = argument.rfind("global:", 0) == 0;
    const std::string path = argument.substr(argument.find(':') + 1);
    void* handle = dlopen(path.c_str(), RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
    if (!handle) {
      std::printf("cannot load %s: %s\n", path.c_str(), text_or_null(dlerror()).c_str());
      return 1;
    }
    handles.push_back({"loaded " + std::to_string(i), handle});
    std::printf("== %s\n", argument.substr(0, argument.find(':') + 1).append(std::to_string(i)).c_str());
    probe_everything(handles);
  }
  return 0;
}
