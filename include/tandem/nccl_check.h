#pragma once
// Checks for every NCCL return: a failure throws tandem::Error with the call's text, NCCL's message
// (and its last error on the communicator) and the file:line of the call. ncclInProgress is no
// failure: on a non-blocking communicator the call goes on in the background (tandem/nccl_wait.h).
#include <nccl.h>

#include "tandem/error.h"

namespace tandem::detail {
[[noreturn]] void throw_nccl(ncclResult_t, ncclComm_t comm, const char* expr, const char* file, int line);
}  // namespace tandem::detail

// `comm` may be nullptr; when given, ncclGetLastError(comm) adds NCCL's own explanation.
#define TANDEM_NCCL_CHECK(comm, expr)                                               \
  do {                                                                              \
    ncclResult_t tandem_err_ = (expr);                                              \
    if (tandem_err_ != ncclSuccess && tandem_err_ != ncclInProgress)                \
      ::tandem::detail::throw_nccl(tandem_err_, (comm), #expr, __FILE__, __LINE__); \
  } while (0)
