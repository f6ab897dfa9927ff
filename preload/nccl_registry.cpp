#include "nccl_registry.h"

namespace tandem::preload {

void CommunicatorRegistry::add(const void* comm, CommunicatorInfo info) {
  if (!comm) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  comms_[comm] = std::move(info);
}

void CommunicatorRegistry::update(const void* comm, const CommunicatorInfo& info) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto it = comms_.find(comm);
  if (it == comms_.end()) return;  // destroyed meanwhile
  it->second.nranks = info.nranks;
  it->second.rank = info.rank;
  it->second.cuda_device = info.cuda_device;
}

std::optional<CommunicatorInfo> CommunicatorRegistry::find(const void* comm) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto it = comms_.find(comm);
  if (it == comms_.end()) return std::nullopt;
  return it->second;
}

void CommunicatorRegistry::add_pre_mul_sum(const void* comm, int op, const PreMulSumScalar& scalar) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto it = comms_.find(comm);
  if (it != comms_.end()) it->second.pre_mul_sums[op] = scalar;
}

void CommunicatorRegistry::remove_pre_mul_sum(const void* comm, int op) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto it = comms_.find(comm);
  if (it != comms_.end()) it->second.pre_mul_sums.erase(op);
}

void CommunicatorRegistry::remove(const void* comm) {
  const std::lock_guard<std::mutex> lock(mutex_);
  comms_.erase(comm);
}

size_t CommunicatorRegistry::size() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return comms_.size();
}

}  // namespace tandem::preload
