#include "nccl_copy_engine.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "log.h"
#include "nccl_thread_context.h"
#include "real_symbols.h"
#include "route/route_abi_call.h"
#include "runtime.h"

namespace tandem::preload {
namespace {

// The program's group on this thread: the routed calls it holds and the communicators of the calls
// it left to NCCL.
thread_local std::vector<HeldCall> t_held;
thread_local std::vector<ncclComm_t> t_nccl_comms;

// How long a route waits for its peers (lane splits, window registrations, the last use of the
// pool) before it fails rather than hang: NCCL's own collectives have no limit, so this is generous.
constexpr double kRouteTimeoutS = 600;

constexpr const char* kRouteLibrary = "libtandem_nccl_route.so";

// The route library's C ABI (TANDEM_NCCL_ROUTE_FUNCTIONS), resolved once: one field per function,
// named after it (`create` is tandem_nccl_route_create).
struct RouteLibrary {
  bool loaded = false;
  std::string why;  // when not loaded
#define TANDEM_ROUTE_FUNCTION_FIELD(name) decltype(&tandem_nccl_route_##name) name = nullptr;
  TANDEM_NCCL_ROUTE_FUNCTIONS(TANDEM_ROUTE_FUNCTION_FIELD)
#undef TANDEM_ROUTE_FUNCTION_FIELD
};

// The file that defines the program's NCCL (the real function behind a hook).
std::string program_nccl_file() {
  for (Hook h : {Hook::ncclAllReduce, Hook::ncclAllGather, Hook::ncclCommInitRank, Hook::ncclCommDestroy}) {
    if (std::string file = file_of(real_address(h)); !file.empty()) return file;
  }
  return "";
}

// Every function of the list from `handle`; false when one is missing.
bool bind_functions(void* handle, RouteLibrary& lib) {
  bool all = true;
#define TANDEM_BIND_ROUTE_FUNCTION(name) all = bind_function(handle, lib.name, "tandem_nccl_route_" #name) && all;
  TANDEM_NCCL_ROUTE_FUNCTIONS(TANDEM_BIND_ROUTE_FUNCTION)
#undef TANDEM_BIND_ROUTE_FUNCTION
  return all;
}

// The file of the loaded object the loader would give the route library for its libnccl.so.2
// dependency (matched by SONAME), or "" when none is loaded: then dlopen would load one, a second
// NCCL beside the program's.
std::string loaded_nccl_by_soname() {
  void* handle = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) {
    (void)take_dl_error();
    return "";
  }
  const std::string file = file_of(real_dlsym()(handle, "ncclGetVersion"));
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
    lib.why = "cannot load " + path + ": " + take_dl_error();
    return lib;
  }
  if (!bind_functions(handle, lib) || lib.abi_version() != TANDEM_NCCL_ROUTE_ABI_VERSION) {
    lib.why = path + " is not the route library of this interposer (another version)";
    return lib;
  }
  // Never a second NCCL: the route must drive the program's copy, the one that owns its communicators.
  const std::string ours = lib.nccl_file();
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
  uint64_t id = 0;  // one per communicator's lifetime: NCCL may reuse a destroyed one's handle
  tandem_nccl_route* route = nullptr;
  bool unavailable = false;
  bool failed = false;
  tandem_nccl_route_stats last{};  // what the counters already hold of this route
};

std::mutex g_mutex;
uint64_t g_last_slot_id = 0;  // under g_mutex
std::unordered_map<ncclComm_t, Slot>& slots() {
  static auto* s = new std::unordered_map<ncclComm_t, Slot>;  // never destroyed: hooks run during exit
  return *s;
}

// One thread drives a communicator (NCCL's rule), so a slot's route is used by one thread at a time;
// the lock only guards the map (whose nodes do not move).
Slot& slot_of(ncclComm_t comm) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  const auto [it, made] = slots().try_emplace(comm);
  if (made) it->second.id = ++g_last_slot_id;
  return it->second;
}

// The route of the communicator a held call was issued on, or null when the program destroyed or
// aborted that communicator since (its slot gone, or a new communicator's at the same handle).
Slot* live_slot(const HeldCall& h) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = slots().find(h.comm);
  if (it == slots().end() || it->second.id != h.slot || !it->second.route) return nullptr;
  return &it->second;
}

// Adds what the route did since the last look to the process's counters.
void account(Slot& slot) {
  tandem_nccl_route_stats now{};
  library().get_stats(slot.route, &now);
  Counters& c = counters();
  // Every route counter (tandem/route_counters.h) into its total. A growth saturates (stats.h) rather
  // than wrap into a small number; a delta may be negative (the pool given back when it grows): added
  // modulo 2^64, it subtracts.
#define TANDEM_ACCOUNT_ROUTE_COUNTER(name, unit, meaning)                                \
  if (now.name >= slot.last.name)                                                        \
    Counters::add_saturating(c.copy_engine_##name, uint64_t(now.name - slot.last.name)); \
  else                                                                                   \
    c.copy_engine_##name.fetch_add(uint64_t(now.name - slot.last.name), std::memory_order_relaxed);
  TANDEM_ROUTE_COUNTERS(TANDEM_ACCOUNT_ROUTE_COUNTER)
#undef TANDEM_ACCOUNT_ROUTE_COUNTER
  // The route decides with its lanes, at its first call; said once per process, as it happens.
  if (now.peer_copies_unavailable > slot.last.peer_copies_unavailable) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true, std::memory_order_relaxed))
      log(LogLevel::Warn,
          "copy-engine route: peer copies asked for, but NCCL maps not every peer's window on this communicator "
          "(ranks of other nodes, or sharing one GPU): the route stages");
  }
  slot.last = now;
}

// The slot's route, made now if the library is there and the communicator has none yet; null (and
// the slot marked unavailable) otherwise.
tandem_nccl_route* route_for(Slot& slot, ncclComm_t comm) {
  if (slot.route || slot.unavailable) return slot.route;
  const RouteLibrary& lib = library();
  if (!lib.loaded) {
    slot.unavailable = true;
    return nullptr;
  }
  char why[512] = "";
  slot.route = lib.create(comm, kRouteTimeoutS, runtime().config.route_pool_max_bytes, why, sizeof why);
  if (slot.route) counters().copy_engine_routes.fetch_add(1, std::memory_order_relaxed);
  if (!slot.route) {
    slot.unavailable = true;
    static std::atomic<bool> said{false};
    if (!said.exchange(true, std::memory_order_relaxed))
      log(LogLevel::Warn, "copy-engine route unavailable: %s; collectives left to NCCL", why);
  }
  return slot.route;
}

// The ranks may be out of step after a failure partway: this cannot be hidden. The program gets
// NCCL's error for an internal failure, as if NCCL had failed, and later calls on the communicators
// go to NCCL.
RouteAttempt failed(const char* what, const char* why) {
  log(LogLevel::Error, "copy-engine %s failed: %s; returning ncclInternalError to the program", what, why);
  RouteAttempt a;
  a.outcome = RouteOutcome::RouteFailed;
  a.error = ncclInternalError;
  return a;
}

}  // namespace

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

RouteOutcome check_copy_engine_route(ncclComm_t comm, const CopyEngineCall& call) {
  const InsideTandem inside;
  try {
    Slot& slot = slot_of(comm);
    if (slot.failed) return RouteOutcome::RouteFailed;
    tandem_nccl_route* route = route_for(slot, comm);
    if (!route) return RouteOutcome::RouteUnavailable;
    const tandem_nccl_route_call abi = to_route_abi(call);
    const int outcome = library().check(route, &abi);
    return outcome >= 0 && outcome < kRouteOutcomeCount ? RouteOutcome(outcome) : RouteOutcome::RouteUnavailable;
  } catch (...) {
    return RouteOutcome::RouteUnavailable;
  }
}

RouteAttempt run_copy_engine_route(ncclComm_t comm, const CopyEngineCall& call) {
  const InsideTandem inside;
  try {
    Slot& slot = slot_of(comm);
    char why[512] = "";
    const tandem_nccl_route_call abi = to_route_abi(call);
    const int result = library().run(slot.route, &abi, why, sizeof why);
    account(slot);
    if (result == TANDEM_ROUTE_DONE) return RouteAttempt{RouteOutcome::CopyEngine, ncclSuccess};
    slot.failed = true;
    return failed(nccl_function(call.kind), why);
  } catch (...) {
    return failed(nccl_function(call.kind), "an internal error of the interposer");
  }
}

void defer_grouped(const HeldCall& held) {
  HeldCall h = held;
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    const auto it = slots().find(h.comm);  // made by check_copy_engine_route, which accepted the call
    h.slot = it == slots().end() ? 0 : it->second.id;
  }
  t_held.push_back(h);
}

namespace {

// A communicator in NCCL's part of the group whose group NCCL may issue after ncclGroupEnd returns.
bool issued_asynchronously(ncclComm_t comm) {
  const auto info = runtime().communicators.find(comm);
  return !info || info->non_blocking;
}

}  // namespace

HandedBack take_held_for_nccl() {
  HandedBack back;
  try {
    std::vector<HeldCall> live;
    live.reserve(t_held.size());
    for (const HeldCall& h : t_held) {
      if (live_slot(h))
        live.push_back(h);
      else
        counters().count_collective(h.call.kind, RouteOutcome::CommunicatorGone, h.bytes);
    }
    if (live.size() != t_held.size())
      log(LogLevel::Info,
          "ncclGroupEnd: %zu routed collectives of the group were on a communicator destroyed or "
          "aborted inside it; not run",
          t_held.size() - live.size());
    t_held.swap(live);
    if (t_held.empty()) return back;
    for (const HeldCall& h : t_held)
      if (h.device != t_held.front().device) back.why = RouteOutcome::SeveralDevicesGroup;
    if (back.why == RouteOutcome::NotRequested &&
        std::any_of(t_nccl_comms.begin(), t_nccl_comms.end(), issued_asynchronously))
      back.why = RouteOutcome::NonBlockingGroup;
    if (back.why != RouteOutcome::NotRequested) back.calls.swap(t_held);
  } catch (...) {
    // Out of memory: the held calls stay held; finish_group, which checks each communicator again,
    // runs them or drops them.
    back.calls.clear();
  }
  return back;
}

void note_grouped_for_nccl(ncclComm_t comm) {
  if (std::find(t_nccl_comms.begin(), t_nccl_comms.end(), comm) == t_nccl_comms.end()) t_nccl_comms.push_back(comm);
}

ncclResult_t finish_group(ncclResult_t nccl_result) {
  std::vector<HeldCall> held;
  held.swap(t_held);
  t_nccl_comms.clear();
  if (held.empty()) return ncclSuccess;
  const auto count_all = [&](RouteOutcome outcome) {
    for (const HeldCall& h : held) counters().count_collective(h.call.kind, outcome, h.bytes);
  };
  if (nccl_result != ncclSuccess && nccl_result != ncclInProgress) {
    log(LogLevel::Warn, "ncclGroupEnd failed (%d): the group's %zu routed collectives were not run", int(nccl_result),
        held.size());
    count_all(RouteOutcome::RouteFailed);
    return ncclSuccess;  // nothing of the routed part ran: NCCL's failure is the group's
  }
  const InsideTandem inside;
  try {
    std::vector<tandem_nccl_route*> routes;
    std::vector<tandem_nccl_route_call> calls;
    std::vector<Slot*> used;
    std::vector<HeldCall> run;
    for (const HeldCall& h : held) {
      // A communicator destroyed since take_held_for_nccl (by another thread): nothing runs on it.
      Slot* slot = live_slot(h);
      if (!slot) {
        counters().count_collective(h.call.kind, RouteOutcome::CommunicatorGone, h.bytes);
        continue;
      }
      run.push_back(h);
      routes.push_back(slot->route);
      calls.push_back(to_route_abi(h.call));
      if (std::find(used.begin(), used.end(), slot) == used.end()) used.push_back(slot);
    }
    held.swap(run);
    if (held.empty()) return ncclSuccess;
    char why[512] = "";
    const int result = library().run_group(routes.data(), calls.data(), calls.size(), why, sizeof why);
    for (Slot* slot : used) account(*slot);
    if (result == TANDEM_ROUTE_DONE) {
      count_all(RouteOutcome::CopyEngine);
      return ncclSuccess;
    }
    for (Slot* slot : used) slot->failed = true;
    count_all(RouteOutcome::RouteFailed);
    return failed("group", why).error;
  } catch (...) {
    count_all(RouteOutcome::RouteFailed);
    return failed("group", "an internal error of the interposer").error;
  }
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
