// The fake NCCL (fake_nccl.h). Like the real library, it never calls its own API through the PLT:
// one API function reaching another goes through the static helpers here, so each call the
// interposer forwards is recorded once.
#include "fake_nccl.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

namespace {

using json = nlohmann::json;

struct FakeComm {
  int nranks = 0;
  int rank = 0;
  int device = 0;             // ncclCommCuDevice's answer, once ready
  bool initialising = false;  // non-blocking, until fake_nccl_finish_init
  int group_polls = -1;       // queries left in progress after an in-progress group end; -1: none pending
};

std::mutex g_mutex;
json g_calls = json::array();
std::string g_text;

void record(json call) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_calls.push_back(std::move(call));
}

json describe_config(const ncclConfig_t* c) {
  if (!c) return nullptr;
  return {{"size", c->size},
          {"magic", c->magic},
          {"version", c->version},
          {"blocking", c->blocking},
          {"cgaClusterSize", c->cgaClusterSize},
          {"minCTAs", c->minCTAs},
          {"maxCTAs", c->maxCTAs},
          {"netName", c->netName ? json(c->netName) : json(nullptr)},
          {"CTAPolicy", c->CTAPolicy}};
}

ncclResult_t g_next_group_end = ncclSuccess;                 // fake_nccl_fail_next_group_end
std::pair<ncclComm_t, int> g_in_progress_group{nullptr, 0};  // fake_nccl_next_group_end_in_progress

// On `device`: NCCL makes a communicator on the calling thread's current CUDA device, 0 in a process
// that never chose one (ncclCommInitAll: on the devices of its list).
ncclComm_t make(int nranks, int rank, const ncclConfig_t* config, int device = 0) {
  auto* c = new FakeComm;
  c->nranks = nranks;
  c->rank = rank;
  c->device = device;
  c->initialising = config && config->blocking == 0;
  return reinterpret_cast<ncclComm_t>(c);
}

FakeComm* fake(ncclComm_t comm) { return reinterpret_cast<FakeComm*>(comm); }

ncclResult_t created(ncclComm_t* out, int nranks, int rank, const ncclConfig_t* config) {
  *out = make(nranks, rank, config);
  return fake(*out)->initialising ? ncclInProgress : ncclSuccess;
}

// NCCL refuses a query on a communicator still initialising (and prints a warning): counted.
ncclResult_t query(const char* fn, ncclComm_t comm, int* out, int FakeComm::*field) {
  if (!comm || !out) return ncclInvalidArgument;
  if (fake(comm)->initialising) {
    record({{"fn", fn}, {"refused", "not ready"}});
    return ncclInvalidArgument;
  }
  *out = fake(comm)->*field;
  return ncclSuccess;
}

// `root` >= 0: a broadcast's, recorded too.
ncclResult_t collective(const char* fn, const void* send, const void* recv, size_t count, ncclDataType_t type, int op,
                        ncclComm_t comm, int root = -1) {
  json call = {{"fn", fn}, {"count", count},           {"type", static_cast<int>(type)},
               {"op", op}, {"in_place", send == recv}, {"comm_known", comm != nullptr}};
  if (root >= 0) call["root"] = root;
  record(call);
  if (count == kFakeNcclFailingCount) {
    errno = kFakeNcclErrno;
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

}  // namespace

extern "C" {

const char* fake_nccl_calls_json() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_text = g_calls.dump();
  return g_text.c_str();
}

ncclComm_t fake_nccl_unseen_comm(int nranks, int rank) { return make(nranks, rank, nullptr); }

void fake_nccl_finish_init(ncclComm_t comm) { fake(comm)->initialising = false; }

void fake_nccl_set_device(ncclComm_t comm, int device) { fake(comm)->device = device; }

void fake_nccl_record(const char* json_object) { record(json::parse(json_object)); }

void fake_nccl_fail_next_group_end(ncclResult_t result) { g_next_group_end = result; }

void fake_nccl_next_group_end_in_progress(ncclComm_t comm, int polls) { g_in_progress_group = {comm, polls}; }

ncclResult_t ncclGetVersion(int* version) {
  if (!version) return ncclInvalidArgument;
  // FAKE_NCCL_VERSION: an older NCCL, for the interposer's version check.
  const char* as_if = std::getenv("FAKE_NCCL_VERSION");
  *version = as_if ? std::atoi(as_if) : NCCL_VERSION_CODE;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) { return result == ncclSuccess ? "no error" : "fake error"; }

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId, int rank) {
  record({{"fn", "ncclCommInitRank"}, {"nranks", nranks}, {"rank", rank}});
  return created(comm, nranks, rank, nullptr);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId, int rank, ncclConfig_t* config) {
  record({{"fn", "ncclCommInitRankConfig"}, {"nranks", nranks}, {"rank", rank}, {"config", describe_config(config)}});
  return created(comm, nranks, rank, config);
}

ncclResult_t ncclCommInitRankScalable(ncclComm_t* comm, int nranks, int rank, int n_ids, ncclUniqueId*,
                                      ncclConfig_t* config) {
  record({{"fn", "ncclCommInitRankScalable"}, {"n_ids", n_ids}, {"config", describe_config(config)}});
  return created(comm, nranks, rank, config);
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devices) {
  record({{"fn", "ncclCommInitAll"}, {"ndev", ndev}});
  for (int i = 0; i < ndev; ++i) comms[i] = make(ndev, i, nullptr, devices ? devices[i] : i);
  return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int, ncclComm_t* newcomm, ncclConfig_t* config) {
  record({{"fn", "ncclCommSplit"}, {"color", color}, {"config", describe_config(config)}});
  if (color == NCCL_SPLIT_NOCOLOR) {
    *newcomm = nullptr;
    return ncclSuccess;
  }
  return comm ? created(newcomm, 1, 0, config) : ncclInvalidArgument;
}

ncclResult_t ncclCommShrink(ncclComm_t comm, int*, int exclude_count, ncclComm_t* newcomm, ncclConfig_t* config,
                            int shrink_flags) {
  record({{"fn", "ncclCommShrink"},
          {"excluded", exclude_count},
          {"flags", shrink_flags},
          {"config", describe_config(config)}});
  return comm ? created(newcomm, 1, 0, config) : ncclInvalidArgument;
}

ncclResult_t ncclCommFinalize(ncclComm_t) {
  record({{"fn", "ncclCommFinalize"}});
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  record({{"fn", "ncclCommDestroy"}});
  delete fake(comm);
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  record({{"fn", "ncclCommAbort"}});
  delete fake(comm);
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* state) {
  if (!comm || !state) return ncclInvalidArgument;
  FakeComm* c = fake(comm);
  *state = c->initialising ? ncclInProgress : ncclSuccess;
  if (c->group_polls >= 0) {  // after an in-progress group end: recorded until it answers done
    if (c->group_polls > 0) *state = ncclInProgress;
    record({{"fn", "ncclCommGetAsyncError"}, {"in_progress", c->group_polls > 0}});
    --c->group_polls;
  }
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  return query("ncclCommCount", comm, count, &FakeComm::nranks);
}
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  return query("ncclCommUserRank", comm, rank, &FakeComm::rank);
}
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return query("ncclCommCuDevice", comm, device, &FakeComm::device);
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t) {
  return collective("ncclAllReduce", send, recv, count, type, op, comm);
}
ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t) {
  return collective("ncclReduceScatter", send, recv, count, type, op, comm);
}
ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t) {
  return collective("ncclAllGather", send, recv, count, type, -1, comm);
}
// ncclBcast reaches the broadcast through the static helper, as NCCL's own does.
ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t) {
  return collective("ncclBroadcast", send, recv, count, type, -1, comm, root);
}
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t type, int root, ncclComm_t comm, cudaStream_t) {
  return collective("ncclBcast", buff, buff, count, type, -1, comm, root);
}
ncclResult_t ncclAlltoAll(const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                          cudaStream_t) {
  return collective("ncclAlltoAll", send, recv, count, type, -1, comm);
}
ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t) {
  return collective("ncclReduce", send, recv, count, type, op, comm, root);
}
// A send and a receive: `root` holds the peer.
ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t type, int peer, ncclComm_t comm, cudaStream_t) {
  return collective("ncclSend", send, nullptr, count, type, -1, comm, peer);
}
ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t type, int peer, ncclComm_t comm, cudaStream_t) {
  return collective("ncclRecv", nullptr, recv, count, type, -1, comm, peer);
}

// Pre-multiplied sums: ops from ncclNumOps on, as NCCL numbers them per communicator.
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t type,
                                      ncclScalarResidence_t residence, ncclComm_t comm) {
  static int next = ncclNumOps;
  record({{"fn", "ncclRedOpCreatePreMulSum"},
          {"type", static_cast<int>(type)},
          {"device", residence == ncclScalarDevice},
          {"scalar_known", scalar != nullptr}});
  if (!op || !comm) return ncclInvalidArgument;
  *op = static_cast<ncclRedOp_t>(next++);
  return ncclSuccess;
}
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t) {
  record({{"fn", "ncclRedOpDestroy"}, {"op", static_cast<int>(op)}});
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  record({{"fn", "ncclGroupStart"}});
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd() {
  record({{"fn", "ncclGroupEnd"}});
  ncclResult_t result = g_next_group_end;
  g_next_group_end = ncclSuccess;
  if (g_in_progress_group.first && result == ncclSuccess) {
    fake(g_in_progress_group.first)->group_polls = g_in_progress_group.second;
    g_in_progress_group = {nullptr, 0};
    return ncclInProgress;
  }
  if (result != ncclSuccess) errno = kFakeNcclErrno;
  return result;
}

// What tandem's copy-engine route library links besides the above (libtandem_nccl_route.so loads
// only when every one is there). The route never gets as far as calling them on a machine without a
// GPU: they are recorded, and refuse.
const char* ncclGetLastError(ncclComm_t) { return "fake NCCL"; }
ncclResult_t ncclGather(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  record({{"fn", "ncclGather"}});
  return ncclInvalidUsage;
}
ncclResult_t ncclScatter(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  record({{"fn", "ncclScatter"}});
  return ncclInvalidUsage;
}
ncclResult_t ncclCommWindowRegister(ncclComm_t, void*, size_t, ncclWindow_t*, int) {
  record({{"fn", "ncclCommWindowRegister"}});
  return ncclInvalidUsage;
}
ncclResult_t ncclCommWindowDeregister(ncclComm_t, ncclWindow_t) {
  record({{"fn", "ncclCommWindowDeregister"}});
  return ncclInvalidUsage;
}
ncclResult_t ncclMemAlloc(void** ptr, size_t) {
  record({{"fn", "ncclMemAlloc"}});
  if (ptr) *ptr = nullptr;
  return ncclInvalidUsage;
}
ncclResult_t ncclMemFree(void*) {
  record({{"fn", "ncclMemFree"}});
  return ncclInvalidUsage;
}

}  // extern "C"
