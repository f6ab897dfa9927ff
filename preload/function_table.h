#pragma once
// Launched functions -> FunctionRecord, looked up on every launch without a lock: an open-addressing
// table of atomics. Inserting (once per function) takes a mutex; records are never removed (a module
// unloaded and a new function at the same address would inherit the old record: see docs/RUN.md).
//
// Publication order: an inserter stores the record pointer, then the key (release); a reader that
// sees the key (acquire) therefore sees the record. A reader that probes past a slot being filled
// misses and takes the locked insert path, which finds the finished entry.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "function_record.h"

namespace tandem::preload {

class FunctionTable {
 public:
  static constexpr size_t kCapacity = size_t{1} << 16;
  static constexpr size_t kMaxRecords = kCapacity / 2;  // keeps probe sequences short
  static constexpr size_t kMaxProbes = 128;

  FunctionRecord* find(const void* handle) const;
  // Returns the record for `handle`, creating it with `make` (called without the lock held) if
  // absent; nullptr if the table is full.
  FunctionRecord* find_or_insert(const void* handle, const std::function<std::unique_ptr<FunctionRecord>()>& make);
  void for_each(const std::function<void(FunctionRecord&)>& visit) const;

  // fork(): the prepare handler takes the insert lock so that the child never inherits it held.
  void lock_for_fork() { insert_mutex_.lock(); }
  void unlock_after_fork() { insert_mutex_.unlock(); }

 private:
  struct Slot {
    std::atomic<uintptr_t> key{0};
    std::atomic<FunctionRecord*> record{nullptr};
  };
  static size_t home_slot(uintptr_t key);

  Slot slots_[kCapacity];
  std::mutex insert_mutex_;
  size_t records_ = 0;  // guarded by insert_mutex_
};

}  // namespace tandem::preload
