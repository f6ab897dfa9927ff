// libtandem_nccl_route.so (tandem_nccl_route.h): the C ABI over tandem::CopyEngineRoute.
#include "tandem_nccl_route.h"

#include <dlfcn.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "tandem/copy_engine_route.h"

#define TANDEM_ROUTE_EXPORT __attribute__((visibility("default")))

struct tandem_nccl_route {
  std::unique_ptr<tandem::CopyEngineRoute> route;
};

namespace {

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

TANDEM_ROUTE_EXPORT tandem_nccl_route* tandem_nccl_route_create(ncclComm_t comm, double timeout_s, char* why,
                                                                size_t why_size) {
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
    created->route = std::make_unique<tandem::CopyEngineRoute>(comm, rules);
    return created.release();
  } catch (const std::exception& e) {
    say(why, why_size, e.what());
  } catch (...) {
    say(why, why_size, "unknown error");
  }
  return nullptr;
}

TANDEM_ROUTE_EXPORT int tandem_nccl_route_collective(tandem_nccl_route* r, int kind, const void* send, void* recv,
                                                     size_t count, ncclDataType_t dtype, ncclRedOp_t op,
                                                     cudaStream_t stream, char* why, size_t why_size) {
  using tandem::CopyEngineCollective;
  if (!r || !r->route || kind < 0 || kind > 3) {
    say(why, why_size, "no route");
    return TANDEM_ROUTE_DECLINED;
  }
  const auto k = static_cast<CopyEngineCollective>(kind);
  try {
    const std::string refused = r->route->refusal(k, count, dtype, op);
    if (!refused.empty()) {
      say(why, why_size, refused);
      return TANDEM_ROUTE_DECLINED;
    }
    // A stream being captured into a CUDA graph: the route's waits on its lanes cannot run inside a
    // capture, so the call goes to NCCL (which captures). Every rank captures alike.
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    const cudaError_t asked = cudaStreamIsCapturing(stream, &capture);
    if (asked != cudaSuccess || capture != cudaStreamCaptureStatusNone) {
      say(why, why_size, "stream-capturing");
      return TANDEM_ROUTE_DECLINED;
    }
    switch (k) {
      case CopyEngineCollective::AllReduce:
        r->route->all_reduce(send, recv, count, dtype, stream);
        break;
      case CopyEngineCollective::ReduceScatter:
        r->route->reduce_scatter(send, recv, count, dtype, stream);
        break;
      case CopyEngineCollective::AllGather:
        r->route->all_gather(send, recv, count, dtype, stream);
        break;
      case CopyEngineCollective::AllToAll:
        r->route->all_to_all(send, recv, count, dtype, stream);
        break;
    }
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

TANDEM_ROUTE_EXPORT void tandem_nccl_route_get_stats(const tandem_nccl_route* r, tandem_nccl_route_stats* out) {
  if (!out) return;
  *out = {};
  if (!r || !r->route) return;
  const tandem::CopyEngineRouteStats s = r->route->stats();
  out->calls = s.calls;
  out->staged_bytes = s.staged_bytes;
  out->pool_bytes = s.pool_bytes;
  out->registrations = s.registrations;
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
