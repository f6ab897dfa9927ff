#pragma once
// Coordination between ranks that live in separate processes (mpirun, torchrun, srun), over a small
// NCCL communicator of its own: barrier, broadcast from rank 0 and all-gather of bytes. NCCL is what
// every rank already has and what reaches across nodes, so the same code serves every launcher; MPI
// or files only carry the first unique id (ranks/process_rank.h).
//
// Every operation is a collective on the channel's own stream, after which the host polls the
// stream and ncclCommGetAsyncError until done, an NCCL error, or the time-out: then the channel is
// aborted and the call throws, naming the rank and the step. Never called while the measured
// streams run: the runners drain those first, so a control collective never competes with a
// measured kernel.
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>
#include <vector>

#include "tandem/deadline.h"
#include "tandem/nccl_wait.h"

namespace tandem::bench {

class ControlChannel {
 public:
  // Collective: every rank calls it with the same id and `nranks`, on its own (current) device.
  // Waits at most `timeout_s` for all ranks to join; `hint` is added to that time-out's message.
  ControlChannel(const ncclUniqueId& id, int rank, int nranks, double timeout_s, const std::string& hint = "");
  ~ControlChannel();
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  // Returns once every rank has entered the same barrier (a one-element all-reduce: its result
  // depends on every rank's input, so no rank can see it complete before all have joined).
  void barrier(const std::string& step = "barrier");
  // Rank 0's `bytes` bytes at `data` overwrite every other rank's.
  void broadcast(void* data, size_t bytes, const std::string& step = "broadcast");
  // Every rank's bytes, by rank. Two collectives: the lengths, then the bytes padded to the longest.
  std::vector<std::string> all_gather(const std::string& mine, const std::string& step = "all-gather");

  // After a failure: aborts the communicator (the destructor then does not wait for peers).
  void abort() noexcept;
  int rank() const { return rank_; }
  int size() const { return nranks_; }

 private:
  // The constructor's work: buffers, stream, and the communicator, awaited until every rank joined.
  void join(const ncclUniqueId& id, const std::string& hint);
  void release() noexcept;
  // How the channel waits on its communicator (tandem/nccl_wait.h): --timeout, aborting on failure.
  WaitRules rules();
  // Polls until the stream has drained: spins for the first moments (a barrier between steps takes
  // tens of microseconds), then sleeps.
  void await_stream(const std::string& step, Deadline deadline);
  // Aborts, then throws with the rank, the step and `why`.
  [[noreturn]] void fail(const std::string& step, const std::string& why);
  void throw_if_async_error(const std::string& step);
  void reserve(size_t bytes);
  // Every rank's `slot` bytes at host_ + rank * slot, gathered into host_ (nranks * slot bytes).
  void gather_slots(size_t slot, const std::string& step, Deadline until);

  int rank_;
  int nranks_;
  double timeout_s_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* device_ = nullptr;  // capacity_ bytes
  char* host_ = nullptr;    // pinned, capacity_ bytes
  size_t capacity_ = 0;
  bool aborted_ = false;
};

}  // namespace tandem::bench
