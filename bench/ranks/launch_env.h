#pragma once
// Where this process sits among the ranks of a run, read from the launcher's environment: mpirun
// (OpenMPI), torchrun, srun (Slurm), or any launcher that sets RANK/WORLD_SIZE or PMI_RANK/PMI_SIZE.
// Also which GPU this process drives and how the ranks find each other (the rendezvous). Pure C++,
// no CUDA: CPU-tested. This is the one module that reads the launchers' variables and the
// TANDEM_RENDEZVOUS variable (docs/ENVIRONMENT.md).
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace tandem::bench {

// The most ranks a launcher's variables may announce (WORLD_SIZE, OMPI_COMM_WORLD_SIZE, SLURM_NTASKS,
// PMI_SIZE, and their local counterparts): far above any job tandem can drive, far below the sizes
// at which per-rank loops and files outlast --timeout.
inline constexpr int kMaxWorldSize = 65536;

// threads: one process drives every GPU, one thread each (no launcher, or a launcher's world of one).
// The others: one rank per process, named after the launcher that started it.
enum class LaunchMode { Threads, Mpi, Torchrun, Slurm, Env };
const char* to_string(LaunchMode mode);

// What the command line asked for; every field is optional.
struct LaunchRequest {
  std::string launch = "auto";  // auto | threads | mpi | torchrun | slurm | env
  std::string rendezvous;       // --rendezvous DIR; empty: $TANDEM_RENDEZVOUS, else automatic
  int device = -1;              // --device N; -1: the local rank
  bool allow_shared_gpu = false;
};

// A variable's value, or nullopt when unset. Tests pass a map; the command passes the process's.
using Environment = std::function<std::optional<std::string>(const std::string& name)>;
Environment process_environment();
Environment map_environment(std::map<std::string, std::string> variables);

struct LaunchEnv {
  LaunchMode mode = LaunchMode::Threads;
  int rank = 0;
  int world_size = 1;
  int local_rank = -1;        // -1: the launcher did not say (then the rank is used)
  int local_world_size = -1;  // -1: unknown
  bool multi_node = false;    // the launcher says the ranks span several nodes
  std::string source;         // the variables read, for messages ("OMPI_COMM_WORLD_RANK/SIZE")
  bool is_process_mode() const { return mode != LaunchMode::Threads; }
};

// Reads the launch from `env`. `requested` is --launch: "auto" detects, in this order (the inner
// launcher first: mpirun and torchrun may themselves run inside a Slurm job):
//   OMPI_COMM_WORLD_RANK/SIZE -> mpi; RANK/WORLD_SIZE -> torchrun (env without TORCHELASTIC_*);
//   PMI_RANK/PMI_SIZE -> env (slurm when SLURM_PROCID/SLURM_NTASKS say the same);
//   SLURM_PROCID/SLURM_NTASKS -> slurm; nothing -> threads.
// An automatically detected world of one runs as threads over the visible GPUs, as without a
// launcher. Malformed, incomplete, inconsistent or out-of-bounds values (a size above kMaxWorldSize, a
// rank not below its size) throw tandem::UserError naming the variable.
LaunchEnv detect_launch(const std::string& requested, const Environment& env);

// The GPU this process drives: --device when given, else the local rank. One visible GPU serves
// any local rank (the launcher gave each process its own, e.g. srun --gpus-per-task=1); a local rank
// beyond the visible GPUs is an error unless sharing is allowed (then it wraps around).
int choose_device(const LaunchEnv& launch, const LaunchRequest& request, int visible_gpus);

// How the ranks exchange the first NCCL unique id.
enum class RendezvousKind {
  Mpi,         // MPI_Bcast (launched by mpirun and built with MPI)
  NcclCommId,  // NCCL_COMM_ID=host:port: every rank derives the id, rank 0 listens there
  File,        // rank 0 publishes it in a directory every rank can read
};
struct RendezvousPlan {
  RendezvousKind kind = RendezvousKind::File;
  std::string where;              // File: the directory; NcclCommId: host:port
  bool set_nccl_comm_id = false;  // NcclCommId derived here: the caller exports NCCL_COMM_ID=where
  std::string describe() const;   // "file:/tmp/...", "mpi", "nccl-comm-id:host:port"
};
// In order: --rendezvous DIR or TANDEM_RENDEZVOUS (a directory; the job's own folder is made in
// it), NCCL_COMM_ID, MPI when launched by mpirun and available, torchrun across nodes:
// NCCL_COMM_ID=MASTER_ADDR:(MASTER_PORT+1); else a folder under /tmp (one node only: ranks on
// several nodes without a shared directory or NCCL_COMM_ID are an error, raised here).
RendezvousPlan choose_rendezvous(const LaunchEnv& launch, const LaunchRequest& request, const Environment& env,
                                 bool mpi_available);
// The job's key, the same on every rank of one job and different between concurrent jobs:
// SLURM_JOB_ID.SLURM_STEP_ID, the OpenMPI job id, TORCHELASTIC_RUN_ID with MASTER_ADDR:MASTER_PORT,
// ... or "default". Only file-name-safe characters.
std::string rendezvous_key(const LaunchEnv& launch, const Environment& env);

}  // namespace tandem::bench
