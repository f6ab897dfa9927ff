#include "dl_error.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <string>

#include "real_symbols.h"

namespace tandem::preload {
namespace {

// Per thread, like glibc's own error state.
struct PendingRewrite {
  bool armed = false;
  std::string glibc_message;  // what glibc will return: our path, then the symbol
  std::string message;        // what it would return without us
  std::string returned;       // the last rewritten message, valid until the next
                              // dlerror() call
};

PendingRewrite& pending() {
  static thread_local PendingRewrite state;
  return state;
}

const char* own_object_name() {
  Dl_info info{};
  link_map* map = nullptr;
  if (dladdr1(reinterpret_cast<void*>(&own_object_name), &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0 ||
      !map || !map->l_name)
    return "";
  return map->l_name;
}

}  // namespace

void arm_dl_error_rewrite(const char* object_name, const char* name) noexcept {
  try {
    PendingRewrite& state = pending();
    state.glibc_message = std::string(own_object_name()) + ": undefined symbol: " + name;
    state.message = std::string(object_name) + ": undefined symbol: " + name;
    state.armed = true;
  } catch (...) {
    // Out of memory: glibc's own message (naming this library) is reported
    // unchanged.
  }
}

}  // namespace tandem::preload

extern "C" __attribute__((visibility("default"))) char* dlerror(void) {
  using namespace tandem::preload;
  char* message = real_dlerror()();
  PendingRewrite& state = pending();
  if (!state.armed) return message;
  state.armed = false;  // whatever glibc returned, its state has moved on since
                        // the hook's lookup
  if (!message || state.glibc_message != message) return message;
  state.returned.swap(state.message);
  return state.returned.data();
}
