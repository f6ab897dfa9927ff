#include "ranks/process_rank.h"

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "ranks/control_channel.h"
#include "ranks/file_rendezvous.h"
#include "ranks/mpi_bootstrap.h"
#include "ranks/peer_processes.h"
#include "tandem/communicators.h"
#include "tandem/cuda_check.h"
#include "tandem/device.h"
#include "tandem/nccl_check.h"
#include "tandem/nccl_wait.h"

namespace tandem::bench {

namespace {

std::string id_bytes(const ncclUniqueId& id) { return std::string(id.internal, sizeof(id.internal)); }

ncclUniqueId id_from(const std::string& bytes) {
  ncclUniqueId id{};
  TANDEM_REQUIRE(bytes.size() == sizeof(id.internal), "rendezvous: received " + std::to_string(bytes.size()) +
                                                          " bytes for an NCCL unique id of " +
                                                          std::to_string(sizeof(id.internal)));
  std::memcpy(id.internal, bytes.data(), bytes.size());
  return id;
}

std::string hint_for(const RendezvousPlan& plan) {
  if (plan.kind == RendezvousKind::File)
    return "; every rank must use the same directory (ranks on several nodes: a shared one, --rendezvous DIR)";
  if (plan.kind == RendezvousKind::NcclCommId)
    return " (rendezvous through NCCL_COMM_ID=" + plan.where + ", which cannot name the missing rank)";
  return "";
}

}  // namespace

GpuIdentity identify_gpu(int device) {
  GpuIdentity id = this_machine();
  char bus[64] = {};
  TANDEM_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof(bus), device));
  id.bus_id = bus;
  cudaDeviceProp prop{};
  TANDEM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  const auto* u = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);
  char uuid[64];
  std::snprintf(uuid, sizeof(uuid), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  id.uuid = uuid;
  return id;
}

RendezvousPlan planned_rendezvous(const LaunchEnv& launch, const LaunchRequest& request, const Environment& env,
                                  std::string* mpi_missing) {
  const bool mpi = launch.mode == LaunchMode::Mpi && mpi_available(mpi_missing);
  if (launch.mode == LaunchMode::Mpi && !mpi && mpi_missing && mpi_missing->empty())
    *mpi_missing = "the MPI module did not load";
  return choose_rendezvous(launch, request, env, mpi);
}

ProcessRank::ProcessRank(const LaunchEnv& launch, const LaunchRequest& request, double timeout_s,
                         const Environment& env)
    : launch_(launch), request_(request), timeout_s_(timeout_s), env_(env) {
  TANDEM_REQUIRE(launch.is_process_mode(), "ProcessRank needs a launcher's rank (not the threads mode)");
  device_ = choose_device(launch_, request_, visible_gpu_count());
  // Before any CUDA or NCCL object is made: they belong to the current device.
  TANDEM_CUDA_CHECK(cudaSetDevice(device_));
  const GpuIdentity me = identify_gpu(device_);

  std::string mpi_missing;
  plan_ = planned_rendezvous(launch_, request_, env_, &mpi_missing);
  hint_ = hint_for(plan_);
  if (launch_.mode == LaunchMode::Mpi && !mpi_missing.empty() && plan_.kind == RendezvousKind::File)
    notes_.push_back("MPI bootstrap unavailable (" + mpi_missing + "); rendezvous through " + plan_.where);

  std::vector<std::string> identities;
  const ncclUniqueId id = rendezvous_id(me, identities);
  control_ = std::make_unique<ControlChannel>(id, launch_.rank, launch_.world_size, timeout_s_, hint_);
  if (plan_.kind == RendezvousKind::NcclCommId) {
    // NCCL_COMM_ID made every rank derive the same id; with it still set, every later
    // ncclGetUniqueId would return that address again and every communicator would bootstrap
    // through one port. Unset it now that the control channel is up (not before: a non-blocking
    // init reads it in the background), so later ids are fresh and travel over the channel.
    unsetenv("NCCL_COMM_ID");
  }
  coordinator_ = std::make_unique<ProcessCoordinator>(*control_);
  try {
    if (identities.empty()) {
      // NCCL_COMM_ID carried no identities: compare them now. Every rank gets the same list and
      // the same verdict, so every rank stops together.
      identities = control_->all_gather(serialize(me), "GPU identities");
      const std::string why = judge_gpus(identities);
      if (!why.empty()) TANDEM_THROW(why);
    }
    // Every rank's process, so that a later failure can name the rank that was lost.
    for (const auto& text : control_->all_gather(serialize(this_process()), "processes"))
      peers_.push_back(parse_peer_process(text));
  } catch (...) {
    coordinator_->fail(std::current_exception());
    throw;
  }
  // Everyone is in the control communicator, so everyone has read the rendezvous files.
  if (plan_.kind == RendezvousKind::File && launch_.rank == 0) remove_rendezvous_files(plan_.where, launch_.world_size);
}

ProcessRank::~ProcessRank() = default;

std::string ProcessRank::lost_peers() const {
  // A killed peer's sockets close while it is still exiting, and a failure can be seen here before
  // the process table shows the peer gone: look again for a moment before concluding nothing is.
  for (int look = 0; look < 10; ++look) {
    const std::string lost = describe_lost_peers(peers_, launch_.rank);
    if (!lost.empty() || peers_.empty()) return lost;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return "";
}

std::string ProcessRank::judge_gpus(const std::vector<std::string>& identities) {
  std::vector<GpuIdentity> ids;
  for (const auto& text : identities) ids.push_back(parse_gpu_identity(text));
  const std::string why = shared_gpu_message(ids);
  if (why.empty()) return "";
  if (!request_.allow_shared_gpu) return why;
  shared_gpu_ = true;
  return "";
}

ncclUniqueId ProcessRank::rendezvous_id(const GpuIdentity& me, std::vector<std::string>& identities) {
  ncclUniqueId id{};
  switch (plan_.kind) {
    case RendezvousKind::NcclCommId:
      if (plan_.set_nccl_comm_id) {
        setenv("NCCL_COMM_ID", plan_.where.c_str(), 1);
        notes_.push_back("NCCL bootstrap at NCCL_COMM_ID=" + plan_.where +
                         " (MASTER_ADDR, MASTER_PORT+1); set NCCL_COMM_ID or --rendezvous to choose");
      }
      // Every rank: NCCL derives the id from the address; rank 0 listens there during init.
      TANDEM_NCCL_CHECK(nullptr, ncclGetUniqueId(&id));
      return id;
    case RendezvousKind::Mpi: {
      if (launch_.rank == 0) TANDEM_NCCL_CHECK(nullptr, ncclGetUniqueId(&id));
      const MpiExchange ex = mpi_exchange(id_bytes(id), serialize(me), launch_.rank, launch_.world_size, timeout_s_);
      if (ex.rank != launch_.rank)
        TANDEM_THROW("MPI says rank " + std::to_string(ex.rank) + " but " + launch_.source + " says " +
                     std::to_string(launch_.rank));
      identities = ex.identities;
      // Every rank has every identity and reaches the same verdict.
      const std::string why = judge_gpus(identities);
      if (!why.empty()) TANDEM_THROW(why);
      id = id_from(ex.payload);
      break;
    }
    case RendezvousKind::File: {
      if (launch_.rank == 0) TANDEM_NCCL_CHECK(nullptr, ncclGetUniqueId(&id));
      FileRendezvousOptions o;
      o.dir = plan_.where;
      o.rank = launch_.rank;
      o.world_size = launch_.world_size;
      o.identity = serialize(me);
      o.timeout_s = timeout_s_;
      o.hint = hint_;
      // Rank 0 judges; the others learn its verdict through the rendezvous and stop with it.
      const FileRendezvousResult r =
          file_rendezvous(o, launch_.rank == 0 ? id_bytes(id) : std::string(),
                          [&](const std::vector<std::string>& ids) { return judge_gpus(ids); });
      identities = r.identities;
      // Rank 0 judged; every other rank notes the sharing too.
      if (launch_.rank != 0) judge_gpus(identities);
      id = id_from(r.payload);
      break;
    }
  }
  if (shared_gpu_) {
    // NCCL refuses two ranks of one host on one GPU. Allowed sharing: every rank claims a host of its
    // own, so NCCL connects the ranks through its network transport. It runs, but what it measures
    // is not what separate GPUs would show.
    const std::string host_id = me.machine + "/tandem-rank-" + std::to_string(launch_.rank);
    setenv("NCCL_HOSTID", host_id.c_str(), 0);
    notes_.push_back(
        "ranks share a GPU (--allow-shared-gpu): NCCL connects them as separate hosts (NCCL_HOSTID); "
        "timings are not representative");
  }
  return id;
}

ncclComm_t ProcessRank::create_communicator(const std::string& what) {
  ncclUniqueId id{};
  if (launch_.rank == 0) TANDEM_NCCL_CHECK(nullptr, ncclGetUniqueId(&id));
  coordinator_->broadcast_from_rank0(&id, sizeof(id));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // the wait for peers is ours to bound
  ncclComm_t comm = nullptr;
  TANDEM_NCCL_CHECK(nullptr, ncclCommInitRankConfig(&comm, launch_.world_size, id, launch_.rank, &config));
  WaitRules rules;
  rules.timeout_s = timeout_s_;
  rules.who = "rank " + std::to_string(launch_.rank);
  rules.timeout_setting = "--timeout";
  rules.on_failure = [comm] { abort_communicator(comm); };
  await_communicator(comm, rules, what + " initialisation");
  return comm;
}

}  // namespace tandem::bench
