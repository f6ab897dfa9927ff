#include "function_table.h"

namespace tandem::preload {

size_t FunctionTable::home_slot(uintptr_t key) {
  // Fibonacci hashing; handles are heap pointers, so the low bits carry little.
  return static_cast<size_t>((static_cast<uint64_t>(key >> 4) * 0x9E3779B97F4A7C15ull) >> 48) & (kCapacity - 1);
}

FunctionRecord* FunctionTable::find(const void* handle) const {
  const auto key = reinterpret_cast<uintptr_t>(handle);
  size_t slot = home_slot(key);
  for (size_t probe = 0; probe < kMaxProbes; ++probe, slot = (slot + 1) & (kCapacity - 1)) {
    const uintptr_t k = slots_[slot].key.load(std::memory_order_acquire);
    if (k == key) return slots_[slot].record.load(std::memory_order_acquire);
    if (k == 0) return nullptr;
  }
  return nullptr;
}

FunctionRecord* FunctionTable::find_or_insert(const void* handle,
                                              const std::function<std::unique_ptr<FunctionRecord>()>& make) {
  if (FunctionRecord* found = find(handle)) return found;
  // Build outside the lock: it calls into the driver.
  std::unique_ptr<FunctionRecord> made = make();
  const auto key = reinterpret_cast<uintptr_t>(handle);
  std::lock_guard<std::mutex> lock(insert_mutex_);
  size_t slot = home_slot(key);
  for (size_t probe = 0; probe < kMaxProbes; ++probe, slot = (slot + 1) & (kCapacity - 1)) {
    const uintptr_t k = slots_[slot].key.load(std::memory_order_relaxed);
    if (k == key) return slots_[slot].record.load(std::memory_order_relaxed);  // another thread won
    if (k != 0) continue;
    if (records_ >= kMaxRecords || !made) return nullptr;
    FunctionRecord* record = made.release();  // owned by the table for the life of the process
    slots_[slot].record.store(record, std::memory_order_release);
    slots_[slot].key.store(key, std::memory_order_release);
    ++records_;
    return record;
  }
  return nullptr;
}

void FunctionTable::for_each(const std::function<void(FunctionRecord&)>& visit) const {
  for (const auto& slot : slots_) {
    if (slot.key.load(std::memory_order_acquire) == 0) continue;
    if (FunctionRecord* record = slot.record.load(std::memory_order_acquire)) visit(*record);
  }
}

}  // namespace tandem::preload
