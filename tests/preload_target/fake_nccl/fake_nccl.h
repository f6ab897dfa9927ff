#pragma once
// A stand-in for libnccl.so.2 (same soname, the real nccl.h's types), for the CPU tests of the
// interposer's NCCL hooks on machines without a GPU: it records every call it receives, with what
// the interposer may have changed (the configuration), and answers like NCCL does for what the
// hooks rely on (non-blocking creation, ncclCommGetAsyncError, the size queries). Never installed.
//
// Controls, beyond NCCL's API (and FAKE_NCCL_VERSION in the environment: what ncclGetVersion says):
#include <nccl.h>

extern "C" {
// Every call received so far, as a JSON array (one object per call, "fn" naming it).
const char* fake_nccl_calls_json();
// A communicator the program made without NCCL's creation functions (the hooks never saw it).
ncclComm_t fake_nccl_unseen_comm(int nranks, int rank);
// A non-blocking communicator (config.blocking = 0) stays in progress until this is called, as a
// real one does until its initialisation thread is done; no other call changes that.
void fake_nccl_finish_init(ncclComm_t comm);
// The CUDA device a communicator says it is on (ncclCommCuDevice, which like NCCL's refuses while the
// communicator is initialising). Each is made on device 0, a process's current device until it chooses
// one (ncclCommInitAll's on the devices of its list, else 0 to ndev - 1), as NCCL makes them.
void fake_nccl_set_device(ncclComm_t comm, int device);
// The next ncclGroupEnd fails with `result` and sets errno to kFakeNcclErrno, as an NCCL whose group
// failed at its end (an asynchronous error, a peer gone).
void fake_nccl_fail_next_group_end(ncclResult_t result);
// The next ncclGroupEnd answers ncclInProgress, as NCCL's does with a non-blocking communicator whose
// part of the group is still being enqueued: `comm` then answers ncclInProgress to its next `polls`
// ncclCommGetAsyncError queries, then ncclSuccess; those queries are recorded, so a test sees who waited.
void fake_nccl_next_group_end_in_progress(ncclComm_t comm, int polls);
// Appends a JSON object (text) to the call log: how the fake route library (fake_route.cpp) records
// what it ran, in one sequence with what NCCL received.
void fake_nccl_record(const char* json_object);
}

// A collective with this count fails with ncclInvalidArgument and sets errno to this value, so the
// tests see NCCL's return code and errno reach the program.
inline constexpr size_t kFakeNcclFailingCount = 999;
inline constexpr int kFakeNcclErrno = 61;  // ENODATA

// The fake route library (fake_route.cpp): a call on this stream finds the route not set up for a
// capture (CaptureNotReady); a routed call of this many elements fails partway.
inline const cudaStream_t kFakeCapturingStream = reinterpret_cast<cudaStream_t>(0xcafe);
inline constexpr size_t kFakeRouteFailingCount = 777;
