// The lookups of dlsym_probe made from a library's code instead of the
// program's: dlsym's answer (RTLD_DEFAULT's scope, RTLD_NEXT's starting point,
// dlerror()'s object name) depends on who calls.
#include <dlfcn.h>

extern "C" {

__attribute__((visibility("default"))) void* dlsym_probe_library_dlsym(void* handle, const char* name) {
  return dlsym(handle, name);
}

__attribute__((visibility("default"))) void* dlsym_probe_library_dlvsym(void* handle, const char* name,
                                                                        const char* version) {
  return dlvsym(handle, name, version);
}

}  // extern "C"
