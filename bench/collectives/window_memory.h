#pragma once
// The device memory of the buffers a case's collectives use, and its NCCL symmetric windows: the
// one place the benchmark allocates and registers window memory (policies copy-engine and
// nccl-symmetric, tandem/symmetric_windows.h).
//
// NCCL registers whole buffers as windows and then finds, for each collective, the window that
// contains its send or receive pointer. A collective often uses a sub-range of one allocation
// (dp-backward's buckets in the flat gradient buffer, per-expert slices, an in-place all-gather's
// input inside its output), so each range is mapped to the allocation that contains it
// (tandem::containing_allocations) and every such allocation is registered once. Registration is
// collective: every rank registers the same buffers in the same order, which first use in program
// order gives (every rank builds the same program over the same shapes).
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/collective_call.h"
#include "tandem/symmetric_windows.h"

namespace tandem::bench {

using tandem::ByteRange;
using tandem::containing_allocations;

// Every collective's send range then receive range, in program order (in-place collectives give the
// same range twice). Pure (tests/cpu/test_scenario_windows.cpp), as the next two.
std::vector<ByteRange> collective_ranges(const CaseCollectives& collectives);
// Why copy engines cannot take the case's collectives, or "" when they can: every collective takes
// the copy-engine route (tandem/copy_engine.h), whose refusal names the first collective that
// cannot (an all-reduce that does not split into equal chunks).
std::string copy_engine_refusal(const CaseCollectives& collectives);
// Bytes of the scratch buffer the copy-engine reductions need: the largest all-reduce or
// reduce-scatter send buffer; 0 when the case has neither.
int64_t copy_engine_scratch_bytes(const CaseCollectives& collectives);

class WindowMemory {
 public:
  WindowMemory() = default;
  // Frees the memory, unless windows are still registered (an error unwound past release()):
  // deregistration is collective and a destructor cannot meet the other ranks, so the windows are
  // then left to the communicators' destroy or abort, which drops them, and the memory is kept
  // rather than freed under NCCL's mapping.
  ~WindowMemory();
  WindowMemory(const WindowMemory&) = delete;
  WindowMemory& operator=(const WindowMemory&) = delete;

  // `bytes` from ncclMemAlloc: cuMem-backed memory, which NCCL can register as a window and which
  // behaves as ordinary device memory otherwise.
  void* allocate(size_t bytes);
  // Every allocation, in allocation order (the same on every rank).
  const std::vector<ByteRange>& allocations() const { return allocations_; }

  // Registers, on `comm` - and with `lanes` (copy-engine: lane 0 is `comm`) on every lane's
  // communicator - the allocations that hold the case's collective ranges, and for copy-engine
  // reductions a scratch buffer (allocated once) beside them; `issue` then says how the case's
  // collectives on `comm` are issued (ncclAlltoAll for all-to-all; with `lanes`, on copy engines).
  // Collective: every rank calls it with the same communicators. Once per communicator (a second
  // call only fills `issue`). Returns "" on success, or one line saying why it cannot apply (with
  // `lanes`: no collective, or one the copy engines refuse), in which case nothing is registered.
  std::string register_windows(const CaseCollectives& collectives, ncclComm_t comm, const CopyEngineLanes* lanes,
                               const WaitRules& rules, const std::string& what, CollectiveIssue& issue);
  // The communicators with windows, in the order of their first registration.
  std::vector<ncclComm_t> communicators() const;
  // Deregisters every window in registration order, each awaited. Collective: every rank calls it
  // together, before the memory is freed. Safe when nothing is registered.
  void release(const std::string& what);

 private:
  std::vector<ByteRange> allocations_;
  void* scratch_ = nullptr;  // copy-engine reductions' staging
  int64_t scratch_bytes_ = 0;
  std::unique_ptr<SymmetricWindows> windows_;  // created on first registration
};

}  // namespace tandem::bench
