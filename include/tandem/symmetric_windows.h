#pragma once
// Buffers registered as NCCL symmetric windows (NCCL_WIN_COLL_SYMMETRIC): what NCCL's symmetric
// kernels and copy-engine collectives (tandem/copy_engine.h) need of their buffers.
//
// NCCL registers whole buffers (from ncclMemAlloc, or other cuMem-backed memory) and then finds, for
// each collective, the window that contains its send or receive pointer; the pointer may sit at an
// offset inside its window, which must be the same on every rank. Registration and deregistration
// are collective: every rank registers the same buffers in the same order on the same communicators.
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/nccl_wait.h"

namespace tandem {

struct ByteRange {
  const void* ptr = nullptr;
  int64_t bytes = 0;
};

// Indices into `allocations` of the allocations that contain the ranges, each index once, in the
// order of the first range it contains: the buffers to register so that every range lies in a
// window. Throws tandem::Error when a range lies in no allocation or runs past the end of the one it
// starts in (a window must cover the whole range).
std::vector<size_t> containing_allocations(const std::vector<ByteRange>& allocations,
                                           const std::vector<ByteRange>& ranges);

// Windows this object registered, on any number of communicators, released in registration order
// by release() or the destructor. The buffers must stay allocated while their windows exist.
class SymmetricWindows {
 public:
  // Every registration and release is awaited under `rules` (tandem/nccl_wait.h).
  explicit SymmetricWindows(WaitRules rules = {});
  // release() when windows remain, unless destroyed during unwinding or after a failed release:
  // deregistration is collective and a destructor cannot count on meeting the other ranks, so the
  // windows are then left to the communicator's destroy or abort, which drops them (the buffers must
  // stay allocated until then: holds_registrations()). Never throws.
  ~SymmetricWindows();
  SymmetricWindows(const SymmetricWindows&) = delete;
  SymmetricWindows& operator=(const SymmetricWindows&) = delete;

  // Registers every range, in order, on `comm`, each awaited; `what` names them in errors. Collective.
  // Returns the windows' handles, in the ranges' order.
  std::vector<ncclWindow_t> add(ncclComm_t comm, const std::vector<ByteRange>& ranges, const std::string& what);
  // True once add() registered anything on `comm` (and release() has not run since).
  bool registered_on(ncclComm_t comm) const;
  // The communicators with windows, in the order of their first registration.
  std::vector<ncclComm_t> communicators() const;
  // Deregisters every window in registration order, each awaited. Collective. A window leaves the
  // list only once released, so after a failure holds_registrations() still tells.
  void release(const std::string& what = "symmetric");
  // Windows may still be registered (not released, or a release failed): keep the buffers.
  bool holds_registrations() const { return !windows_.empty(); }
  // Forgets the windows without deregistering them, for an owner that cannot meet the other ranks
  // any more (its communicators were aborted, or a failure elsewhere): the communicators' destroy
  // or abort drops them, and the buffers must stay allocated until then.
  void abandon() noexcept { windows_.clear(); }

 private:
  struct Window {
    ncclComm_t comm;
    ncclWindow_t handle;
  };
  WaitRules rules_;
  std::vector<Window> windows_;  // in registration order
  bool failed_ = false;          // a registration or release threw: never touch the windows again
};

}  // namespace tandem
