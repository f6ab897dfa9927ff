// A stand-in for libtandem_nccl_route.so (preload/route/tandem_nccl_route.h), for the CPU tests of
// the interposer's routing paths: it runs no collective, it records each run (and each group) into
// the fake NCCL's call log, so a test sees in one sequence what NCCL received and what the route
// ran, and in which order. Built into its own folder beside a link to the real interposer, where
// the interposer looks for its route library.
//
// Its verdicts: a call on kFakeCapturingStream is CaptureNotReady (a capture before the route was
// set up); a run of kFakeRouteFailingCount elements fails partway.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "fake_nccl.h"
#include "preload/route/tandem_nccl_route.h"
#include "tandem/copy_engine_eligibility.h"

namespace {

using json = nlohmann::json;

struct Route {
  int id = 0;
  tandem_nccl_route_stats stats{};
};

int g_routes = 0;

json describe(const tandem_nccl_route_call& c) {
  json j = {{"kind", c.kind},
            {"count", c.count},
            {"dtype", static_cast<int>(c.dtype)},
            {"reduction", c.reduction},
            {"stream", reinterpret_cast<uintptr_t>(c.stream)}};
  if (c.reduction == 2 || c.reduction == 3) j["scalar"] = c.scalar;  // PreMulSum, PreDivSum
  if (c.device_scalar) j["device_scalar"] = reinterpret_cast<uintptr_t>(c.device_scalar);
  if (c.kind == 4) j["root"] = c.root;  // a broadcast
  return j;
}

void record(json call) { fake_nccl_record(call.dump().c_str()); }

}  // namespace

struct tandem_nccl_route {
  Route r;
};

extern "C" {

__attribute__((visibility("default"))) int tandem_nccl_route_abi_version(void) { return TANDEM_NCCL_ROUTE_ABI_VERSION; }

__attribute__((visibility("default"))) const char* tandem_nccl_route_nccl_file(void) {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&ncclGetVersion), &info) || !info.dli_fname) return "";
  return info.dli_fname;
}

__attribute__((visibility("default"))) tandem_nccl_route* tandem_nccl_route_create(ncclComm_t comm, double, size_t,
                                                                                   char*, size_t) {
  int rank = -1;
  ncclCommUserRank(comm, &rank);
  auto* route = new tandem_nccl_route;
  route->r.id = g_routes++;
  // The fake NCCL maps no peer's window: peer copies, asked for, are unavailable (the real route says
  // so once its lanes exist, at its first call; here at once).
  const char* peers = std::getenv("TANDEM_ROUTE_PEER_COPIES");
  route->r.stats.peer_copies_unavailable = peers && std::string(peers) == "1" ? 1 : 0;
  record({{"fn", "route.create"}, {"route", route->r.id}, {"rank", rank}});
  return route;
}

__attribute__((visibility("default"))) int tandem_nccl_route_check(const tandem_nccl_route*,
                                                                   const tandem_nccl_route_call* call) {
  using tandem::RouteOutcome;
  return static_cast<int>(call->stream == kFakeCapturingStream ? RouteOutcome::CaptureNotReady
                                                               : RouteOutcome::CopyEngine);
}

__attribute__((visibility("default"))) int tandem_nccl_route_run(tandem_nccl_route* route,
                                                                 const tandem_nccl_route_call* call, char* why,
                                                                 size_t why_size) {
  json j = describe(*call);
  j["fn"] = "route.run";
  j["route"] = route->r.id;
  record(j);
  if (call->count == kFakeRouteFailingCount) {
    std::snprintf(why, why_size, "the fake route fails on %zu elements", call->count);
    return TANDEM_ROUTE_FAILED;
  }
  ++route->r.stats.calls;
  route->r.stats.staged_bytes += int64_t(call->count);
  return TANDEM_ROUTE_DONE;
}

__attribute__((visibility("default"))) int tandem_nccl_route_run_group(tandem_nccl_route* const* routes,
                                                                       const tandem_nccl_route_call* calls, size_t n,
                                                                       char* why, size_t why_size) {
  json group = {{"fn", "route.run_group"}, {"calls", json::array()}};
  bool fails = false;
  for (size_t i = 0; i < n; ++i) {
    json j = describe(calls[i]);
    j["route"] = routes[i]->r.id;
    group["calls"].push_back(j);
    fails = fails || calls[i].count == kFakeRouteFailingCount;
    ++routes[i]->r.stats.calls;
  }
  record(group);
  if (fails) {
    std::snprintf(why, why_size, "the fake route fails a group");
    return TANDEM_ROUTE_FAILED;
  }
  return TANDEM_ROUTE_DONE;
}

__attribute__((visibility("default"))) void tandem_nccl_route_get_stats(const tandem_nccl_route* route,
                                                                        tandem_nccl_route_stats* out) {
  *out = route ? route->r.stats : tandem_nccl_route_stats{};
}

__attribute__((visibility("default"))) void tandem_nccl_route_destroy(tandem_nccl_route* route, int healthy) {
  record({{"fn", "route.destroy"}, {"route", route->r.id}, {"healthy", healthy != 0}});
  delete route;
}

}  // extern "C"
