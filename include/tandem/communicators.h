#pragma once
// The NCCL communicator each policy's settings need (tandem/nccl_config.h), split from the caller's
// own communicator, and closing communicators safely.
//
// ncclCommSplit needs nothing but the parent: no unique id to pass between processes, so a program
// that only has its own communicator (the interposer's, a PyTorch process group's) can get one.
// Splitting is collective over the parent: every rank of the parent must ask for the same settings
// in the same order (the same policies in the same order give that), each from the thread that
// drives its rank; a rank that never asks leaves the others waiting until WaitRules::timeout_s.
#include <nccl.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tandem/nccl_wait.h"
#include "tandem/policy.h"

namespace tandem {

// Closes `c` for good. `healthy` (every rank's work on it is done): ncclCommFinalize, awaited for at
// most timeout_s, then ncclCommDestroy; otherwise, or when the finalize fails or times out,
// ncclCommAbort, which waits for no peer. Never throws. Destroys and aborts are serialised within
// the process: NCCL frees the communicators of one process's ranks together, in whichever rank's
// destroy or abort comes last, from that rank's thread, so with ranks as threads two threads could
// otherwise be unmapping one device's NCCL memory at once. Twice in about twenty `tandem tune` runs
// (NCCL 2.28.3) that ended in "double free or corruption" inside cuMemUnmap under ncclCommDestroy.
// It cannot deadlock: after a finalize, and in an abort, NCCL does not wait for the peers.
void close_communicator(ncclComm_t c, bool healthy, double timeout_s) noexcept;
// ncclCommAbort under the same process-wide serialisation. Never throws.
void abort_communicator(ncclComm_t c) noexcept;

// A communicator of all of `parent`'s ranks in the same order (ncclCommSplit(parent, 0, rank)), with
// `config` (blocking forced to 0), awaited under `rules` (`what` names it in errors). Collective over
// the parent. The caller owns the result.
ncclComm_t split_communicator(ncclComm_t parent, int rank, ncclConfig_t config, const WaitRules& rules,
                              const std::string& what);

// The communicators of a rank's policies, split from its `parent` on first use, one per distinct
// nccl_settings_key(), owned: closed by close() or the destructor (aborted when destroyed during
// unwinding or after abort()). The parent stays the caller's.
class PolicyCommunicators {
 public:
  // `base`: the config every split starts from (NCCL_CONFIG_INITIALIZER when absent); the policy's
  // settings are written over it and blocking is set to 0 (the waits follow `rules`).
  PolicyCommunicators(ncclComm_t parent, WaitRules rules, std::optional<ncclConfig_t> base = std::nullopt);
  ~PolicyCommunicators();
  PolicyCommunicators(const PolicyCommunicators&) = delete;
  PolicyCommunicators& operator=(const PolicyCommunicators&) = delete;

  // `parent` for the default settings (uses_default_nccl_settings), else the communicator for the
  // policy's settings, split (ncclCommSplit(parent, 0, rank)) and awaited on first use. Collective
  // on first use for a key (see the top of this file).
  ncclComm_t communicator_for(const OverlapPolicy& policy);
  // The config a policy's communicator is split with: `base`, blocking = 0, the policy's settings.
  ncclConfig_t config_for(const OverlapPolicy& policy) const;

  ncclComm_t parent() const { return parent_; }
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const WaitRules& rules() const { return rules_; }
  // The communicators split so far, in creation order.
  std::vector<ncclComm_t> owned() const;

  // Aborts every owned communicator now (after a failure: the peers' kernels exit). Later
  // communicator_for() calls for non-default settings throw.
  void abort() noexcept;
  // Closes every owned communicator (close_communicator); `healthy` as there. Idempotent.
  void close(bool healthy) noexcept;

 private:
  ncclComm_t parent_;
  WaitRules rules_;
  ncclConfig_t base_;
  int rank_ = 0;
  int nranks_ = 0;
  bool aborted_ = false;
  std::vector<std::pair<std::string, ncclComm_t>> owned_;  // settings key, communicator
};

}  // namespace tandem
