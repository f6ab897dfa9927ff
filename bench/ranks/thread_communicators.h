#pragma once
// The threads mode's communicators: one process drives every GPU, one thread each, so their NCCL
// communicators are made together, from one thread, before the rank threads start.
#include <nccl.h>

#include <vector>

namespace tandem::bench {

// Creates one non-blocking communicator per device from the calling thread, inside one NCCL group,
// and waits up to `timeout_s` for all of them to be ready; aborts them all and throws if one is not.
std::vector<ncclComm_t> create_communicators(const std::vector<int>& devices, double timeout_s);

}  // namespace tandem::bench
