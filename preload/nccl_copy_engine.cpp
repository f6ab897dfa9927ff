#include "nccl_copy_engine.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "log.h"
#include "real_symbols.h"
#include "route/tandem_nccl_route.h"
#include "runtime.h"

namespace tandem::preload {
namespace {

thread_local int t_inside_tandem = 0;
thread_local int t_group_depth = 0;

// How long a route waits for its peers (lane splits, window registrations, the last use of the
// pool) before it fails rather than hang: NCCL's own collectives have no limit, so this is generous.
constexpr double kRouteTimeoutS = 600;

constexpr const char* kRouteLibrary = "libtandem_nccl_route.so";

// The route library's C ABI, resolved once.
struct RouteLibrary {
  bool loaded = false;
  std::string why;  // when not loaded
  decltype(&tandem_nccl_route_create) create = nullptr;
  decltype(&tandem_nccl_route_collective) collective = nullptr;
  decltype(&tandem_nccl_route_get_stats) get_stats = nullptr;
  decltype(&tandem_nccl_route_destroy) destroy = nullptr;
};

// This library's folder: the route library is installed beside it.
std::string own_folder() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&own_folder), &info) || !info.dli_fname) return "";
  const std::string self = info.dli_fname;
  const size_t slash = self.rfind('/');
  return slash == std::string::npos ? "." : self.substr(0, slash);
}

// The file that defines the program's NCCL (the real function behind a hook).
std::string program_nccl_file() {
  for (Hook h : {Hook::ncclAllReduce, Hook::ncclAllGather, Hook::ncclCommInitRank, Hook::ncclCommDestroy}) {
    Dl_info info{};
    if (void* real = real_address(h); real && dladdr(real, &info) && info.dli_fname) return info.dli_fname;
  }
  return "";
}

template <class Fn>
Fn symbol(void* handle, const char* name) {
  return reinterpret_cast<Fn>(real_dlsym()(handle, name));
}

// The file of the loaded object the loader would give the route library for its libnccl.so.2
// dependency (matched by SONAME), or "" when none is loaded: then dlopen would load one, a second
// NCCL beside the program's.
std::string loaded_nccl_by_soname() {
  void* handle = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) {
    (void)real_dlerror()();  // not the program's failure to read
    return "";
  }
  std::string file;
  Dl_info info{};
  if (void* fn = real_dlsym()(handle, "ncclGetVersion"); fn && dladdr(fn, &info) && info.dli_fname)
    file = info.dli_fname;
  dlclose(handle);  // only the reference RTLD_NOLOAD took
  return file;
}

RouteLibrary load() {
  RouteLibrary lib;
  const std::string path = own_folder() + "/" + kRouteLibrary;
  const std::string program = program_nccl_file(), by_soname = loaded_nccl_by_soname();
  if (program.empty() || by_soname != program) {
    lib.why = "the program's NCCL (" + (program.empty() ? std::string("unknown") : program) +
              ") is not the libnccl.so.2 the route library would bind to (" +
              (by_soname.empty() ? std::string("none loaded") : by_soname) + "); a second NCCL is never loaded";
    return lib;
  }
  // RTLD_NOW: an NCCL without a function the route needs fails here, not in the middle of a call.
  // RTLD_LOCAL: nothing of it joins the program's scope. Its libnccl.so.2 dependency is satisfied by
  // the program's already loaded NCCL (by SONAME).
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    // Read (and so clear) the failure: the program's next dlerror() must not see our dlopen's.
    const char* error = real_dlerror()();
    lib.why = "cannot load " + path + ": " + (error ? error : "unknown error");
    return lib;
  }
  const auto abi = symbol<int (*)()>(handle, "tandem_nccl_route_abi_version");
  const auto nccl_file = symbol<const char* (*)()>(handle, "tandem_nccl_route_nccl_file");
  lib.create = symbol<decltype(lib.create)>(handle, "tandem_nccl_route_create");
  lib.collective = symbol<decltype(lib.collective)>(handle, "tandem_nccl_route_collective");
  lib.get_stats = symbol<decltype(lib.get_stats)>(handle, "tandem_nccl_route_get_stats");
  lib.destroy = symbol<decltype(lib.destroy)>(handle, "tandem_nccl_route_destroy");
  if (!abi || abi() != TANDEM_NCCL_ROUTE_ABI_VERSION || !nccl_file || !lib.create || !lib.collective ||
      !lib.get_stats || !lib.destroy) {
    lib.why = path + " is not the route library of this interposer (another version)";
    return lib;
  }
  // Never a second NCCL: the route must drive the program's copy, the one that owns its communicators.
  const std::string ours = nccl_file();
  if (ours.empty() || ours != program) {
    lib.why = "the route library's NCCL (" + ours + ") is not the program's (" + program + ")";
    return lib;
  }
  lib.loaded = true;
  log(LogLevel::Info, "copy-engine route loaded from %s, on %s", path.c_str(), ours.c_str());
  return lib;
}

const RouteLibrary& library() {
  // Loaded once, at the first collective that would take the route (never at start-up: the
  // program's NCCL must be loaded first).
  static const RouteLibrary lib = [] {
    RouteLibrary l = load();
    if (!l.loaded) log(LogLevel::Warn, "copy-engine route unavailable: %s; collectives left to NCCL", l.why.c_str());
    return l;
  }();
  return lib;
}

struct Slot {
  tandem_nccl_route* route = nullptr;
  bool unavailable = false;
  bool failed = false;
  tandem_nccl_route_stats last{};  // what the counters already hold of this route
};

std::mutex g_mutex;
std::unordered_map<ncclComm_t, Slot>& slots() {
  static auto* s = new std::unordered_map<ncclComm_t, Slot>;  // never destroyed: hooks run during exit
  return *s;
}

// Adds what the route did since the last look to the process's counters.
void account(Slot& slot) {
  tandem_nccl_route_stats now{};
  library().get_stats(slot.route, &now);
  Counters& c = counters();
  c.copy_engine_staged_bytes.fetch_add(uint64_t(now.staged_bytes - slot.last.staged_bytes), std::memory_order_relaxed);
  c.copy_engine_pool_bytes.fetch_add(uint64_t(now.pool_bytes - slot.last.pool_bytes), std::memory_order_relaxed);
  c.copy_engine_registrations.fetch_add(uint64_t(now.registrations - slot.last.registrations),
                                        std::memory_order_relaxed);
  slot.last = now;
}

void say_once(std::atomic<bool>& said, LogLevel level, const std::string& text) {
  if (!said.exchange(true, std::memory_order_relaxed)) log(level, "%s", text.c_str());
}

}  // namespace

bool inside_tandem() { return t_inside_tandem > 0; }
InsideTandem::InsideTandem() { ++t_inside_tandem; }
InsideTandem::~InsideTandem() { --t_inside_tandem; }

void group_started() { ++t_group_depth; }
void group_ended() {
  if (t_group_depth > 0) --t_group_depth;
}
bool inside_group() { return t_group_depth > 0; }

RouteState route_state(ncclComm_t comm) {
  RouteState s;
  try {
    const std::lock_guard<std::mutex> lock(g_mutex);
    const auto it = slots().find(comm);
    if (it != slots().end()) {
      s.unavailable = it->second.unavailable;
      s.failed = it->second.failed;
    }
  } catch (...) {
  }
  return s;
}

RouteAttempt run_copy_engine_route(CollectiveKind kind, const void* send, void* recv, size_t count, ncclDataType_t type,
                                   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  RouteAttempt attempt;
  const InsideTandem inside;
  try {
    const RouteLibrary& lib = library();
    // One thread drives a communicator (NCCL's rule), so the slot's route is used by one thread at a
    // time; the lock only guards the map.
    Slot* slot = nullptr;
    {
      const std::lock_guard<std::mutex> lock(g_mutex);
      slot = &slots()[comm];
    }
    if (!lib.loaded) {
      slot->unavailable = true;
      return attempt;
    }
    char why[512] = "";
    if (!slot->route) {
      slot->route = lib.create(comm, kRouteTimeoutS, why, sizeof why);
      if (!slot->route) {
        slot->unavailable = true;
        static std::atomic<bool> said{false};
        say_once(said, LogLevel::Warn,
                 std::string("copy-engine route unavailable: ") + why + "; collectives left to NCCL");
        return attempt;
      }
    }
    const int result =
        lib.collective(slot->route, static_cast<int>(kind), send, recv, count, type, op, stream, why, sizeof why);
    account(*slot);
    if (result == TANDEM_ROUTE_DONE) {
      attempt.outcome = RouteOutcome::CopyEngine;
    } else if (result == TANDEM_ROUTE_DECLINED) {
      attempt.outcome =
          std::strcmp(why, "stream-capturing") == 0 ? RouteOutcome::StreamCapturing : RouteOutcome::RouteUnavailable;
      if (attempt.outcome == RouteOutcome::RouteUnavailable) {
        static std::atomic<bool> said{false};
        say_once(said, LogLevel::Warn, std::string("copy-engine route declined a collective: ") + why);
      }
    } else {
      // The ranks may be out of step: this cannot be hidden. The program gets NCCL's error for an
      // internal failure, as if NCCL had failed, and later calls on this communicator go to NCCL.
      slot->failed = true;
      attempt.outcome = RouteOutcome::RouteFailed;
      attempt.error = ncclInternalError;
      log(LogLevel::Error, "copy-engine %s failed: %s; returning ncclInternalError to the program", to_string(kind),
          why);
    }
  } catch (...) {
    attempt = RouteAttempt{};
  }
  return attempt;
}

void drop_copy_engine_route(ncclComm_t comm, bool healthy) {
  try {
    Slot slot;
    {
      const std::lock_guard<std::mutex> lock(g_mutex);
      const auto it = slots().find(comm);
      if (it == slots().end()) return;
      slot = it->second;
      slots().erase(it);
    }
    if (!slot.route) return;
    const InsideTandem inside;
    account(slot);
    library().destroy(slot.route, healthy && !slot.failed ? 1 : 0);
  } catch (...) {
  }
}

}  // namespace tandem::preload
