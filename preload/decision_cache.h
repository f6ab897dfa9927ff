#pragma once
// A one-entry cache of a kernel's last shaping decision, readable without a lock and without
// allocation (a sequence lock). Consecutive launches of one kernel almost always have the same
// block size, dynamic shared memory and device, so one entry per kernel makes the occupancy model
// (which allocates) run once per configuration instead of once per launch.
//
// Readers never wait: a read that overlaps a write is a miss. Writers never wait either: a writer
// that finds another writer active skips the update. All fields are atomics, so a torn read is
// detected by the sequence check rather than being undefined behaviour.
#include <atomic>
#include <cstdint>
#include <optional>

namespace tandem::preload {

struct DecisionKey {
  uint64_t launch = 0;      // block size, cluster size, device, requested dynamic smem
  uint64_t collective = 0;  // packed NCCL footprint the decision assumed (0 when it did not matter)
  bool operator==(const DecisionKey& o) const { return launch == o.launch && collective == o.collective; }
};

class DecisionCache {
 public:
  std::optional<uint64_t> find(const DecisionKey& key) const {
    const uint32_t before = sequence_.load(std::memory_order_acquire);
    if (before & 1u) return std::nullopt;  // a write is in progress
    const DecisionKey stored{launch_.load(std::memory_order_relaxed), collective_.load(std::memory_order_relaxed)};
    const uint64_t value = value_.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (sequence_.load(std::memory_order_relaxed) != before || before == 0) return std::nullopt;
    if (!(stored == key)) return std::nullopt;
    return value;
  }

  void store(const DecisionKey& key, uint64_t value) {
    uint32_t current = sequence_.load(std::memory_order_relaxed);
    if ((current & 1u) || !sequence_.compare_exchange_strong(current, current + 1, std::memory_order_acquire))
      return;  // someone else is writing; their entry is as good as ours
    std::atomic_thread_fence(std::memory_order_release);
    launch_.store(key.launch, std::memory_order_relaxed);
    collective_.store(key.collective, std::memory_order_relaxed);
    value_.store(value, std::memory_order_relaxed);
    sequence_.store(current + 2, std::memory_order_release);
  }

 private:
  std::atomic<uint32_t> sequence_{0};  // odd while writing; 0 until the first store
  std::atomic<uint64_t> launch_{0};
  std::atomic<uint64_t> collective_{0};
  std::atomic<uint64_t> value_{0};
};

}  // namespace tandem::preload
