#include "ranks/thread_communicators.h"

#include <cuda_runtime.h>

#include <string>

#include "tandem/communicators.h"
#include "tandem/cuda_check.h"
#include "tandem/nccl_check.h"
#include "tandem/nccl_wait.h"

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
  // A rank that fails or is not ready in time aborts every rank's communicator, so that none waits
  // for a peer that will never come.
  WaitRules rules;
  rules.timeout_s = timeout_s;
  rules.timeout_setting = "--timeout";
  rules.on_failure = [&comms] {
    for (ncclComm_t c : comms) abort_communicator(c);
  };
  for (int rank = 0; rank < n; ++rank) {
    rules.who = "rank " + std::to_string(rank);
    await_communicator(comms[rank], rules, "NCCL communicator initialisation");
  }
  return comms;
}

}  // namespace tandem::bench
