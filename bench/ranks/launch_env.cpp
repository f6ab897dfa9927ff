#include "ranks/launch_env.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <vector>

#include "tandem/error.h"
#include "tandem/printable.h"

namespace tandem::bench {

namespace {

// A variable that must be an integer from 0 to `max` when set.
std::optional<int> read_int(const Environment& env, const std::string& name, int max) {
  const auto value = env(name);
  if (!value) return std::nullopt;
  const std::string& text = *value;
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); }))
    TANDEM_USER_ERROR(name + "=" + quoted_value(text) + " is not a non-negative integer");
  // Compared as text first: no conversion can overflow.
  const std::string significant = text.substr(std::min(text.find_first_not_of('0'), text.size()));
  if (significant.size() > 9 || std::stoi(significant.empty() ? "0" : significant) > max)
    TANDEM_USER_ERROR(name + "=" + printable(text) + " is above " + std::to_string(max) + ", the most " +
                      (max == kMaxWorldSize ? "ranks tandem runs" : "it can be"));
  return std::stoi(significant.empty() ? "0" : significant);
}

// A rank, a world size or a node count.
std::optional<int> read_count(const Environment& env, const std::string& name) {
  return read_int(env, name, kMaxWorldSize);
}

bool is_set(const Environment& env, const std::string& name) { return env(name).has_value(); }

struct Variables {
  const char* rank;
  const char* size;
  std::vector<const char*> local_rank;  // the first one set wins
  const char* local_size;
};

// Reads one launcher's trio. Both rank and size are needed; one without the other is an error.
LaunchEnv read_trio(LaunchMode mode, const Environment& env, const Variables& v) {
  const auto rank = read_count(env, v.rank);
  const auto size = read_count(env, v.size);
  if (!rank || !size)
    TANDEM_USER_ERROR(std::string(rank ? v.rank : v.size) + " is set but " + (rank ? v.size : v.rank) +
                      " is not: the launcher's environment is incomplete");
  LaunchEnv out;
  out.mode = mode;
  out.rank = *rank;
  out.world_size = *size;
  out.source = std::string(v.rank) + "/" + v.size;
  for (const char* name : v.local_rank)
    if (auto local = read_count(env, name)) {
      out.local_rank = *local;
      break;
    }
  if (v.local_size)
    if (auto local = read_count(env, v.local_size)) out.local_world_size = *local;
  if (out.world_size < 1) TANDEM_USER_ERROR(std::string(v.size) + "=0: a run needs at least one rank");
  if (out.rank >= out.world_size)
    TANDEM_USER_ERROR(std::string(v.rank) + "=" + std::to_string(out.rank) + " is not below " + v.size + "=" +
                      std::to_string(out.world_size));
  if (out.local_world_size > out.world_size)
    TANDEM_USER_ERROR(std::string(v.local_size) + "=" + std::to_string(out.local_world_size) + " is above " + v.size +
                      "=" + std::to_string(out.world_size));
  if (out.local_world_size > 0) {
    if (out.local_rank >= out.local_world_size)
      TANDEM_USER_ERROR("local rank " + std::to_string(out.local_rank) + " is not below the local world size " +
                        std::to_string(out.local_world_size));
    out.multi_node = out.local_world_size < out.world_size;
  }
  return out;
}

const Variables kOmpi{
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", {"OMPI_COMM_WORLD_LOCAL_RANK"}, "OMPI_COMM_WORLD_LOCAL_SIZE"};
const Variables kTorch{"RANK", "WORLD_SIZE", {"LOCAL_RANK"}, "LOCAL_WORLD_SIZE"};
const Variables kPmi{"PMI_RANK", "PMI_SIZE", {"MPI_LOCALRANKID", "PMI_LOCAL_RANK"}, "MPI_LOCALNRANKS"};

LaunchEnv read_slurm(const Environment& env) {
  // Inside a step, SLURM_STEP_NUM_TASKS is the step's task count; SLURM_NTASKS may be the job's.
  const char* size = is_set(env, "SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
  LaunchEnv out = read_trio(LaunchMode::Slurm, env, Variables{"SLURM_PROCID", size, {"SLURM_LOCALID"}, nullptr});
  const char* nodes = is_set(env, "SLURM_STEP_NUM_NODES") ? "SLURM_STEP_NUM_NODES" : "SLURM_NNODES";
  if (auto n = read_count(env, nodes)) out.multi_node = *n > 1;
  return out;
}

bool torchelastic(const Environment& env) {
  return is_set(env, "TORCHELASTIC_RUN_ID") || is_set(env, "TORCHELASTIC_RESTART_COUNT") || is_set(env, "GROUP_RANK");
}

LaunchEnv read_mode(LaunchMode mode, const Environment& env) {
  switch (mode) {
    case LaunchMode::Mpi:
      return read_trio(LaunchMode::Mpi, env, kOmpi);
    case LaunchMode::Torchrun:
      return read_trio(LaunchMode::Torchrun, env, kTorch);
    case LaunchMode::Slurm:
      return read_slurm(env);
    case LaunchMode::Env:
      // env: RANK/WORLD_SIZE set by hand or by a launcher we do not know, else PMI (MPICH, Intel MPI).
      return is_set(env, "RANK") || is_set(env, "WORLD_SIZE") ? read_trio(LaunchMode::Env, env, kTorch)
                                                              : read_trio(LaunchMode::Env, env, kPmi);
    case LaunchMode::Threads:
      break;
  }
  return LaunchEnv{};
}

LaunchEnv auto_detect(const Environment& env) {
  if (is_set(env, "OMPI_COMM_WORLD_RANK") || is_set(env, "OMPI_COMM_WORLD_SIZE"))
    return read_mode(LaunchMode::Mpi, env);
  if (is_set(env, "RANK") || is_set(env, "WORLD_SIZE"))
    return read_trio(torchelastic(env) ? LaunchMode::Torchrun : LaunchMode::Env, env, kTorch);
  const bool slurm = is_set(env, "SLURM_PROCID");
  if (is_set(env, "PMI_RANK") || is_set(env, "PMI_SIZE")) {
    LaunchEnv pmi = read_trio(LaunchMode::Env, env, kPmi);
    // srun's PMI plugins set PMI_* too: then it is a Slurm step, and SLURM_LOCALID is reliable.
    if (slurm) {
      LaunchEnv s = read_slurm(env);
      if (s.rank == pmi.rank && s.world_size == pmi.world_size) return s;
    }
    return pmi;
  }
  if (slurm) return read_slurm(env);
  return LaunchEnv{};
}

std::string sanitize(const std::string& text) {
  std::string out;
  for (char c : text) out += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ? c : '_';
  return out.substr(0, 120);
}

std::string value_or(const Environment& env, const std::string& name, const std::string& fallback) {
  const auto v = env(name);
  return v && !v->empty() ? *v : fallback;
}

}  // namespace

const char* to_string(LaunchMode mode) {
  static const char* const kNames[] = {"threads", "mpi", "torchrun", "slurm", "env"};  // in LaunchMode's order
  return kNames[static_cast<int>(mode)];
}

Environment process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
}

Environment map_environment(std::map<std::string, std::string> variables) {
  return [variables = std::move(variables)](const std::string& name) -> std::optional<std::string> {
    auto it = variables.find(name);
    return it == variables.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

LaunchEnv detect_launch(const std::string& requested, const Environment& env) {
  if (requested == "threads") return LaunchEnv{};
  if (requested == "auto") {
    LaunchEnv found = auto_detect(env);
    // A launcher's world of one is the single-process case: drive the visible GPUs with threads.
    return found.world_size == 1 ? LaunchEnv{} : found;
  }
  for (LaunchMode mode : {LaunchMode::Mpi, LaunchMode::Torchrun, LaunchMode::Slurm, LaunchMode::Env}) {
    if (requested != to_string(mode)) continue;
    static const std::map<LaunchMode, std::string> needs = {
        {LaunchMode::Mpi, "OMPI_COMM_WORLD_RANK"},
        {LaunchMode::Torchrun, "RANK"},
        {LaunchMode::Slurm, "SLURM_PROCID"},
    };
    auto need = needs.find(mode);
    if (need != needs.end() && !is_set(env, need->second))
      TANDEM_USER_ERROR("--launch " + requested + " but " + need->second + " is not set: not started by that launcher");
    if (mode == LaunchMode::Env && !is_set(env, "RANK") && !is_set(env, "PMI_RANK"))
      TANDEM_USER_ERROR("--launch env needs RANK and WORLD_SIZE (or PMI_RANK and PMI_SIZE)");
    return read_mode(mode, env);
  }
  TANDEM_USER_ERROR("bad --launch " + quoted_value(requested) + "; accepted: auto, threads, mpi, torchrun, slurm, env");
}

int choose_device(const LaunchEnv& launch, const LaunchRequest& request, int visible) {
  if (visible < 1) TANDEM_USER_ERROR("no GPU is visible to rank " + std::to_string(launch.rank));
  if (request.device >= 0) {
    if (request.device >= visible)
      TANDEM_USER_ERROR("--device " + std::to_string(request.device) + " but only " + std::to_string(visible) +
                        " GPU(s) are visible to rank " + std::to_string(launch.rank));
    return request.device;
  }
  const int local = launch.local_rank >= 0 ? launch.local_rank : launch.rank;
  if (local < visible) return local;
  if (visible == 1) return 0;  // the launcher gave this process one GPU (CUDA_VISIBLE_DEVICES)
  if (request.allow_shared_gpu) return local % visible;
  TANDEM_USER_ERROR("rank " + std::to_string(launch.rank) + " has local rank " + std::to_string(local) + " but only " +
                    std::to_string(visible) + " GPU(s) are visible: start at most " + std::to_string(visible) +
                    " ranks per node, give each rank its GPU with --device, or pass --allow-shared-gpu");
}

std::string RendezvousPlan::describe() const {
  if (kind == RendezvousKind::Mpi) return "mpi";
  return (kind == RendezvousKind::NcclCommId ? "nccl-comm-id:" : "file:") + where;
}

std::string rendezvous_key(const LaunchEnv& launch, const Environment& env) {
  const std::string master =
      is_set(env, "MASTER_ADDR") ? value_or(env, "MASTER_ADDR", "") + "-" + value_or(env, "MASTER_PORT", "") : "";
  std::string key;
  switch (launch.mode) {
    case LaunchMode::Slurm:
      if (is_set(env, "SLURM_JOB_ID"))
        key = "slurm-" + value_or(env, "SLURM_JOB_ID", "") + "." + value_or(env, "SLURM_STEP_ID", "batch");
      break;
    case LaunchMode::Mpi:
      if (is_set(env, "OMPI_MCA_ess_base_jobid"))
        key = "ompi-" + value_or(env, "OMPI_MCA_ess_base_jobid", "");
      else if (is_set(env, "PMIX_NAMESPACE"))
        key = "pmix-" + value_or(env, "PMIX_NAMESPACE", "");
      break;
    case LaunchMode::Torchrun:
      // torchrun without --rdzv-id calls every run "none"; the master address and port tell
      // concurrent runs apart, the restart count tells a restarted group from its predecessor.
      key = "torchrun-" + value_or(env, "TORCHELASTIC_RUN_ID", "none") + "-" + master + "-r" +
            value_or(env, "TORCHELASTIC_RESTART_COUNT", "0");
      break;
    default:
      break;
  }
  if (key.empty()) {
    if (!master.empty())
      key = "master-" + master;
    else if (is_set(env, "SLURM_JOB_ID"))
      key = "slurm-" + value_or(env, "SLURM_JOB_ID", "");
    else if (is_set(env, "PMIX_NAMESPACE"))
      key = "pmix-" + value_or(env, "PMIX_NAMESPACE", "");
    else
      key = "default";
  }
  return sanitize(key);
}

RendezvousPlan choose_rendezvous(const LaunchEnv& launch, const LaunchRequest& request, const Environment& env,
                                 bool mpi_available) {
  const std::string key = rendezvous_key(launch, env);
  std::string dir = request.rendezvous;
  if (dir.empty()) dir = value_or(env, "TANDEM_RENDEZVOUS", "");
  if (!dir.empty()) return {RendezvousKind::File, dir + "/" + key};
  if (auto comm_id = env("NCCL_COMM_ID"); comm_id && !comm_id->empty()) return {RendezvousKind::NcclCommId, *comm_id};
  if (launch.mode == LaunchMode::Mpi && mpi_available) return {RendezvousKind::Mpi};
  if (launch.multi_node) {
    const auto addr = env("MASTER_ADDR");
    // NCCL's root listens on the next port, which must exist too.
    const auto port = read_int(env, "MASTER_PORT", 65534);
    if (launch.mode == LaunchMode::Torchrun && addr && !addr->empty() && port) {
      // torchrun's own store listens on MASTER_PORT; the next port is NCCL's bootstrap root on rank 0.
      return {RendezvousKind::NcclCommId, *addr + ":" + std::to_string(*port + 1), /*set_nccl_comm_id=*/true};
    }
    TANDEM_USER_ERROR("the ranks span several nodes (" + launch.source +
                      ") but no rendezvous reaches them all: give a directory every node shares with --rendezvous "
                      "DIR (or TANDEM_RENDEZVOUS), or set NCCL_COMM_ID=<address of rank 0's node>:<free port> for "
                      "every rank");
  }
  return {RendezvousKind::File, "/tmp/tandem-rendezvous-" + std::to_string(static_cast<long>(getuid())) + "/" + key};
}

}  // namespace tandem::bench
