#pragma once
// Window memory of the peers by address: NCCL maps every rank's part of a symmetric window into each
// process of its LSA team (the ranks that reach each other's memory by load and store: one node's
// NVLink or PCIe peers), which is how its own copy-engine collectives write into the peers' buffers.
// With these addresses a copy engine moves data between the caller's memory (any device memory) and
// a peer's window, so a buffer outside the route's windows need not be staged
// (tandem/copy_engine_plan.h's Push and Pull). NCCL 2.28's device API gives them
// (ncclGetPeerPointer), on the GPU only.
#include <nccl.h>

#include <vector>

namespace tandem {

// Whether every rank of `comm` (`nranks` of them) is in its LSA team (ncclTeamLsa, looked up in the
// NCCL library that owns `comm`: absent from an NCCL without the device API, which answers false).
// NCCL derives the team from the whole communicator's layout, so every rank answers alike.
bool every_peer_by_address(ncclComm_t comm, int nranks);

// Where each rank's part of `window` (registered on a communicator whose LSA team holds all
// `nranks` ranks) starts in this process's address space, by rank. Runs a one-thread kernel on
// `stream` and waits for it; `scratch` is device memory of at least 8 x nranks bytes not in use.
std::vector<char*> peer_window_addresses(ncclWindow_t window, int nranks, void* scratch, cudaStream_t stream);

}  // namespace tandem
