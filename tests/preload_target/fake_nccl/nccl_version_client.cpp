// Linked against the real libnccl.so.2 and calling only what needs no GPU (ncclGetVersion,
// ncclGetErrorString), plus the lookups a framework does: run with and without the interposer by
// tests/cpu/test_preload_nccl_hooks.cpp, its output must not change and no NCCL hook may be called.
#include <dlfcn.h>
#include <nccl.h>

#include <cerrno>
#include <cstdio>

int main() {
  int version = 0;
  errno = 0;
  const ncclResult_t result = ncclGetVersion(&version);
  std::printf("ncclGetVersion -> %d version=%d errno=%d\n", static_cast<int>(result), version, errno);
  std::printf("ncclGetErrorString(ncclInvalidArgument) = %s\n", ncclGetErrorString(ncclInvalidArgument));
  for (const char* name : {"ncclAllReduce", "ncclCommInitRank", "ncclGetVersion", "ncclNoSuchFunction"}) {
    void* found = dlsym(RTLD_DEFAULT, name);
    const char* error = dlerror();
    std::printf("dlsym(RTLD_DEFAULT, %s) -> %s dlerror=%s\n", name, found ? "found" : "NULL", error ? "set" : "(null)");
  }
  return 0;
}
