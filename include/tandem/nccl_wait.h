#pragma once
// Waiting on non-blocking NCCL communicators (ncclConfig_t::blocking = 0) without ever hanging.
// On such a communicator an NCCL call may return before its host-side work (connection setup with
// the peers on first use, a split, a window registration) is done; the communicator is usable, and
// the work is on the stream, only once ncclCommGetAsyncError reports ncclSuccess. A peer that never
// comes would keep it in progress forever, so every wait here has a deadline, and a caller can make
// it fail sooner (a peer it knows has failed).
#include <cuda_runtime.h>
#include <nccl.h>

#include <functional>
#include <string>
#include <vector>

#include "tandem/nccl_check.h"

namespace tandem {

// How a wait gives up.
struct WaitRules {
  // The wait fails once this many seconds have passed.
  double timeout_s = 300;
  // Put before every message, e.g. "rank 3" ("" for none).
  std::string who;
  // Where the timeout is set, named in the message of a timed-out wait, e.g. "--timeout".
  std::string timeout_setting;
  // Called on every poll; may throw (e.g. because another rank failed), and the wait then fails
  // with that exception.
  std::function<void()> each_poll;
  // Called once when the wait fails, whatever the cause, before the exception leaves it: typically
  // aborts the communicators, so that the peers' kernels exit and their waits end too. Must not
  // throw.
  std::function<void()> on_failure;
};

// Polls ncclCommGetAsyncError(c) until it reports ncclSuccess. Throws tandem::Error naming `step`
// (after rules.on_failure) when NCCL reports an error (with NCCL's last error text), when
// rules.each_poll throws, or when rules.timeout_s passes. Call it after every NCCL call on a
// non-blocking communicator before relying on that call's effect; it returns at once on a
// communicator that is ready.
void await_communicator(ncclComm_t c, const WaitRules& rules, const std::string& step);

// Waits for `stream` to drain by polling, never blocking inside CUDA (a collective whose peer never
// arrives would otherwise hang the thread). Fails as await_communicator does, and also when any of
// `watched` reports an asynchronous NCCL error.
void await_stream(cudaStream_t stream, const std::vector<ncclComm_t>& watched, const WaitRules& rules,
                  const std::string& step);

// Throws (after rules.on_failure) when `c` reports an asynchronous error; in progress is no error.
void throw_if_communicator_failed(ncclComm_t c, const WaitRules& rules, const std::string& step);

}  // namespace tandem
