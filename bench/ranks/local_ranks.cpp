#include "ranks/local_ranks.h"

#include <cuda_runtime.h>

#include "ranks/coordinator.h"
#include "ranks/process_rank.h"
#include "ranks/rank_group.h"
#include "ranks/thread_communicators.h"
#include "tandem/cuda_check.h"
#include "tandem/error.h"

namespace tandem::bench {

namespace {

void run_threads(const RankLaunch& launch, int nranks, const std::function<void(LocalRank&)>& body) {
  std::vector<int> devices(nranks);
  for (int i = 0; i < nranks; ++i) devices[i] = i;
  std::vector<ncclComm_t> comms = create_communicators(devices, launch.timeout_s);
  RankGroup group(nranks);
  try {
    group.run([&](int rank) {
      ThreadCoordinator peers(group, rank);
      TANDEM_CUDA_CHECK(cudaSetDevice(devices[rank]));
      LocalRank local{rank, nranks, devices[rank], peers, comms[rank]};
      body(local);
    });
  } catch (...) {
    // Communicators never handed over (their thread failed first) are aborted here: destroying
    // them would wait for peers that have stopped.
    for (ncclComm_t c : comms)
      if (c) ncclCommAbort(c);
    throw;
  }
}

// Rethrows the exception being handled; a tandem::Error gains the names of the ranks this one can
// see have exited or stopped (a time-out or a transport error alone cannot say who was lost).
[[noreturn]] void rethrow_naming_lost_peers(const ProcessRank& process) {
  try {
    throw;
  } catch (const Error& e) {
    const std::string lost = process.lost_peers();
    if (lost.empty()) throw;
    throw Error(std::string(e.what()) + "; " + lost, e.file(), e.line());
  }
}

void run_process(const RankLaunch& launch, int nranks, const std::function<void(LocalRank&)>& body,
                 std::vector<std::string>* notes) {
  ProcessRank process(launch.launch, launch.request, launch.timeout_s);
  TANDEM_REQUIRE(process.size() == nranks, "internal: " + std::to_string(nranks) + " ranks expected, the launch has " +
                                               std::to_string(process.size()));
  if (notes && process.rank() == 0) notes->insert(notes->end(), process.notes().begin(), process.notes().end());
  ncclComm_t comm = nullptr;
  try {
    comm = process.create_communicator("the benchmark's communicator");
    LocalRank local{process.rank(), process.size(), process.device(), process.coordinator(), comm};
    body(local);
  } catch (...) {
    // The body's owner of the communicator (destroyed by now) aborted its communicators; abort the
    // control channel too, so that no peer waits for this rank in a collective that will never come.
    process.coordinator().fail(std::current_exception());
    if (comm) ncclCommAbort(comm);
    rethrow_naming_lost_peers(process);
  }
}

}  // namespace

void run_local_ranks(const RankLaunch& launch, int nranks, const std::function<void(LocalRank&)>& body,
                     std::vector<std::string>* notes) {
  if (launch.launch.is_process_mode())
    run_process(launch, nranks, body, notes);
  else
    run_threads(launch, nranks, body);
}

}  // namespace tandem::bench
