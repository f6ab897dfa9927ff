#pragma once
// The communicators the program created through the hooks: what the collective hooks need to know
// about each (its size and rank, for the route decision) and what the interposer did to it. Keyed by
// the opaque ncclComm_t, so no NCCL header is needed and it is tested on CPU. Thread-safe: ranks
// driven from threads create, use and destroy communicators concurrently.
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace tandem::preload {

// A pre-multiplied sum the program made on a communicator (ncclRedOpCreatePreMulSum): what the
// copy-engine route needs to compute it itself.
struct PreMulSumScalar {
  int dtype = 0;                       // ncclDataType_t of the op
  float host_value = 1;                // ncclScalarHostImmediate: the scalar, read when the op was made
  const void* device_value = nullptr;  // ncclScalarDevice: where the scalar lies (read when a kernel runs)
};

struct CommunicatorInfo {
  int nranks = 0;  // 0 until known (a non-blocking communicator still initialising)
  int rank = -1;
  int cuda_device = -1;
  std::string settings;                         // the nccl-* settings applied at creation, as policy text; "" for none
  std::map<int, PreMulSumScalar> pre_mul_sums;  // by ncclRedOp_t value, until ncclRedOpDestroy
  // NCCL issues a group of a non-blocking communicator after ncclGroupEnd returned (ncclInProgress):
  // the interposer's groups leave such a group to NCCL whole (nccl_copy_engine.h).
  bool non_blocking = false;
};

class CommunicatorRegistry {
 public:
  void add(const void* comm, CommunicatorInfo info);
  // Fills in what was not known at creation (nranks == 0 then).
  void update(const void* comm, const CommunicatorInfo& info);
  std::optional<CommunicatorInfo> find(const void* comm) const;
  // ncclRedOpCreatePreMulSum / ncclRedOpDestroy on a known communicator (ignored otherwise).
  void add_pre_mul_sum(const void* comm, int op, const PreMulSumScalar& scalar);
  void remove_pre_mul_sum(const void* comm, int op);
  // Destroy or abort: the handle may be reused by NCCL for the next communicator.
  void remove(const void* comm);
  size_t size() const;
  // fork(): held across it so the child never inherits it locked; the child forgets every entry (NCCL
  // communicators do not survive a fork).
  void lock_for_fork() { mutex_.lock(); }
  void unlock_after_fork() { mutex_.unlock(); }
  void forget_all_after_fork() { comms_.clear(); }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<const void*, CommunicatorInfo> comms_;
};

}  // namespace tandem::preload
