// libtandem_nccl_route.so (tandem_nccl_route.h): the C ABI over tandem::CopyEngineRoute.
#include "tandem_nccl_route.h"

#include <dlfcn.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "route_abi_call.h"
#include "tandem/copy_engine_route.h"

#define TANDEM_ROUTE_EXPORT __attribute__((visibility("default")))

struct tandem_nccl_route {
  std::unique_ptr<tandem::CopyEngineRoute> route;
};

namespace {

using tandem::preload::from_route_abi;
using tandem::preload::is_valid_route_abi;

void say(char* why, size_t size, const std::string& text) {
  if (why && size) std::snprintf(why, size, "%s", text.c_str());
}

std::string cuda_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

}  // namespace

extern "C" {

TANDEM_ROUTE_EXPORT int tandem_nccl_route_abi_version(void) { return TANDEM_NCCL_ROUTE_ABI_VERSION; }

TANDEM_ROUTE_EXPORT const char* tandem_nccl_route_nccl_file(void) {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&ncclGetVersion), &info) || !info.dli_fname) return "";
  return info.dli_fname;
}

TANDEM_ROUTE_EXPORT tandem_nccl_route* tandem_nccl_route_create(ncclComm_t comm, double timeout_s,
                                                                size_t max_pool_bytes, char* why, size_t why_size) {
  try {
    int version = 0;
    if (ncclGetVersion(&version) != ncclSuccess || version < NCCL_VERSION(2, 28, 0)) {
      say(why, why_size,
          "the copy-engine route needs NCCL 2.28 or later (CTA policy zero, symmetric windows); this process's NCCL "
          "is " +
              std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
              std::to_string(version % 100));
      return nullptr;
    }
    int devices = 0;
    const cudaError_t counted = cudaGetDeviceCount(&devices);
    if (counted != cudaSuccess || devices == 0) {
      say(why, why_size,
          "no usable CUDA device for the copy-engine route (cudaGetDeviceCount: " +
              (counted == cudaSuccess ? std::string("0 devices") : cuda_text(counted)) + ")");
      return nullptr;
    }
    tandem::WaitRules rules;
    rules.timeout_s = timeout_s;
    rules.who = "tandem copy-engine route";
    auto created = std::make_unique<tandem_nccl_route>();
    created->route = std::make_unique<tandem::CopyEngineRoute>(comm, rules, max_pool_bytes);
    return created.release();
  } catch (const std::exception& e) {
    say(why, why_size, e.what());
  } catch (...) {
    say(why, why_size, "unknown error");
  }
  return nullptr;
}

TANDEM_ROUTE_EXPORT int tandem_nccl_route_check(const tandem_nccl_route* r, const tandem_nccl_route_call* c) {
  if (!r || !r->route || !is_valid_route_abi(c)) return static_cast<int>(tandem::RouteOutcome::RouteUnavailable);
  return static_cast<int>(r->route->check(from_route_abi(*c)));
}

TANDEM_ROUTE_EXPORT int tandem_nccl_route_run(tandem_nccl_route* r, const tandem_nccl_route_call* c, char* why,
                                              size_t why_size) {
  if (!r || !r->route || !is_valid_route_abi(c)) {
    say(why, why_size, "no route");
    return TANDEM_ROUTE_FAILED;
  }
  try {
    r->route->run(from_route_abi(*c));
    return TANDEM_ROUTE_DONE;
  } catch (const std::exception& e) {
    say(why, why_size, e.what());
  } catch (...) {
    say(why, why_size, "unknown error");
  }
  // The ranks may be out of step now: the peers' kernels must exit, and no later call may use the
  // lanes.
  r->route->abort();
  return TANDEM_ROUTE_FAILED;
}

TANDEM_ROUTE_EXPORT int tandem_nccl_route_run_group(tandem_nccl_route* const* routes,
                                                    const tandem_nccl_route_call* calls, size_t n, char* why,
                                                    size_t why_size) {
  std::vector<tandem::GroupedCall> grouped;
  try {
    for (size_t i = 0; i < n; ++i) {
      if (!routes || !routes[i] || !routes[i]->route || !is_valid_route_abi(calls + i)) {
        say(why, why_size, "no route");
        return TANDEM_ROUTE_FAILED;
      }
      grouped.push_back({routes[i]->route.get(), from_route_abi(calls[i])});
    }
    tandem::CopyEngineRoute::run_group(grouped);
    return TANDEM_ROUTE_DONE;
  } catch (const std::exception& e) {
    say(why, why_size, e.what());
  } catch (...) {
    say(why, why_size, "unknown error");
  }
  for (const tandem::GroupedCall& g : grouped) g.route->abort();
  return TANDEM_ROUTE_FAILED;
}

TANDEM_ROUTE_EXPORT void tandem_nccl_route_get_stats(const tandem_nccl_route* r, tandem_nccl_route_stats* out) {
  if (!out) return;
  *out = {};
  if (!r || !r->route) return;
  const tandem::CopyEngineRouteStats s = r->route->stats();
#define TANDEM_COPY_ROUTE_COUNTER(name, unit, meaning) out->name = s.name;
  TANDEM_ROUTE_COUNTERS(TANDEM_COPY_ROUTE_COUNTER)
#undef TANDEM_COPY_ROUTE_COUNTER
}

TANDEM_ROUTE_EXPORT void tandem_nccl_route_destroy(tandem_nccl_route* r, int healthy) {
  if (!r) return;
  try {
    if (!healthy && r->route) r->route->abort();
    r->route.reset();
  } catch (...) {
  }
  delete r;
}

}  // extern "C"
