#include "ranks/thread_communicators.h"

#include <cuda_runtime.h>

#include <chrono>
#include <string>
#include <thread>

#include "tandem/communicators.h"
#include "tandem/cuda_check.h"
#include "tandem/error.h"

namespace tandem::bench {

std::vector<ncclComm_t> create_communicators(const std::vector<int>& devices, double timeout_s) {
  ncclUniqueId id;
  TANDEM_NCCL_CHECK(nullptr, ncclGetUniqueId(&id));
  const int n = static_cast<int>(devices.size());
  std::vector<ncclComm_t> comms(n, nullptr);
  // Non-blocking: no NCCL call may wait on the host for a peer that never comes; we poll instead.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  // One thread initialises every rank, so the calls must be grouped or the first would wait for
  // the others.
  TANDEM_NCCL_CHECK(nullptr, ncclGroupStart());
  for (int rank = 0; rank < n; ++rank) {
    TANDEM_CUDA_CHECK(cudaSetDevice(devices[rank]));
    TANDEM_NCCL_CHECK(nullptr, ncclCommInitRankConfig(&comms[rank], n, id, rank, &config));
  }
  TANDEM_NCCL_CHECK(nullptr, ncclGroupEnd());
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeout_s));
  for (int rank = 0; rank < n; ++rank) {
    for (;;) {
      ncclResult_t state = ncclSuccess;
      TANDEM_NCCL_CHECK(comms[rank], ncclCommGetAsyncError(comms[rank], &state));
      if (state == ncclSuccess) break;
      if (state != ncclInProgress || std::chrono::steady_clock::now() > deadline) {
        const std::string reason = state != ncclInProgress ? std::string(ncclGetErrorString(state)) + " (" +
                                                                 ncclGetLastError(comms[rank]) + ")"
                                                           : "not ready within the timeout";
        for (ncclComm_t c : comms)
          if (c) abort_communicator(c);
        TANDEM_THROW("NCCL communicator for rank " + std::to_string(rank) + " failed to initialise: " + reason);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return comms;
}

}  // namespace tandem::bench
