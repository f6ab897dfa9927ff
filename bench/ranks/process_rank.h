#pragma once
// This process's rank when a launcher starts one process per rank (mpirun, torchrun, srun): its GPU,
// the rendezvous that passes the first NCCL unique id, the control channel that coordinates the
// ranks from then on, and the check that no two ranks drive one GPU.
//
// Bootstrap, in order:
//   1. the device: --device, else the local rank (launch_env.h);
//   2. the first unique id: rank 0 draws it and passes it by MPI_Bcast (mpirun), through a
//      rendezvous directory, or every rank derives it from NCCL_COMM_ID; MPI and the directory also
//      carry every rank's GPU identity, so a shared GPU is refused before NCCL refuses it tersely;
//   3. the control channel (an NCCL communicator) forms over that id, within the time-out;
//   4. identities are compared again over the channel (NCCL_COMM_ID carried none);
//   5. every rank's process (pid, machine) is gathered over the channel, to name a lost rank later;
//   6. every later communicator takes its id from rank 0 over the channel.
#include <nccl.h>

#include <memory>
#include <string>
#include <vector>

#include "ranks/coordinator.h"
#include "ranks/gpu_identity.h"
#include "ranks/launch_env.h"
#include "ranks/peer_processes.h"

namespace tandem::bench {

class ControlChannel;

class ProcessRank {
 public:
  // Collective over every rank of the launch; throws tandem::Error (never hangs past `timeout_s`)
  // on a bad launch, a missing rank, mismatched world sizes or a shared GPU.
  ProcessRank(const LaunchEnv& launch, const LaunchRequest& request, double timeout_s,
              const Environment& env = process_environment());
  ~ProcessRank();
  ProcessRank(const ProcessRank&) = delete;
  ProcessRank& operator=(const ProcessRank&) = delete;

  int rank() const { return launch_.rank; }
  int size() const { return launch_.world_size; }
  int device() const { return device_; }
  // Things rank 0 should tell the user (a shared GPU allowed, a derived NCCL_COMM_ID, a fallback).
  const std::vector<std::string>& notes() const { return notes_; }
  Coordinator& coordinator() { return *coordinator_; }
  // After a failure: the ranks on this machine whose processes have exited or are stopped, e.g.
  // "rank 1 (pid 4242) has exited"; "" when none is seen (peers elsewhere cannot be looked at).
  std::string lost_peers() const;

  // A non-blocking communicator over every rank with NCCL's default settings, ready on return.
  // Collective; rank 0's unique id travels over the control channel.
  ncclComm_t create_communicator(const std::string& what);

 private:
  ncclUniqueId rendezvous_id(const GpuIdentity& me, std::vector<std::string>& identities);
  // "" or why the identities cannot run (a shared GPU); notes an allowed sharing.
  std::string judge_gpus(const std::vector<std::string>& identities);

  LaunchEnv launch_;
  LaunchRequest request_;
  double timeout_s_;
  Environment env_;
  int device_ = 0;
  RendezvousPlan plan_;
  std::string hint_;
  bool shared_gpu_ = false;
  std::vector<std::string> notes_;
  std::vector<PeerProcess> peers_;  // by rank
  std::unique_ptr<ControlChannel> control_;
  std::unique_ptr<ProcessCoordinator> coordinator_;  // after control_: destroyed first
};

// The rendezvous the ranks of this launch meet through (choose_rendezvous, with MPI when mpirun
// started them and the MPI module loads): what ProcessRank uses, and what a run's header reports.
// `mpi_missing` receives why MPI cannot serve an mpirun launch.
RendezvousPlan planned_rendezvous(const LaunchEnv& launch, const LaunchRequest& request,
                                  const Environment& env = process_environment(), std::string* mpi_missing = nullptr);

// This process's GPU: host, machine, PCI bus id and UUID of `device`.
GpuIdentity identify_gpu(int device);

}  // namespace tandem::bench
