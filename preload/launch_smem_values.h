#pragma once
// The dynamic shared memory sizes one kernel was launched with, of one kind of launch (shaped, left
// alone by the targeted rule, not shapeable), noted while the timeline records
// (tandem/shaping_check.h). CUPTI's kernel record carries the size a launch ran with but nothing that
// says tandem changed it; the size does, as long as no size of one kind is also a size of another:
// each recorded kernel is matched to its kind by its name and size, and a size seen two ways is
// reported as unattributed, never guessed.
//
// Lock-free and bounded: a few slots filled once each by compare-and-swap, then a relaxed load per
// launch finds the size already there. A kernel launched with more distinct sizes than slots is
// marked overflowed (its kind can then no longer be told from its size).
#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

namespace tandem::preload {

class LaunchSmemValues {
 public:
  static constexpr size_t kSlots = 4;

  void note(uint32_t bytes) {
    const uint64_t tagged = uint64_t(bytes) + 1;  // 0 marks an empty slot
    for (auto& slot : slots_) {
      uint64_t seen = slot.load(std::memory_order_relaxed);
      if (seen == tagged) return;
      if (seen == 0) {
        if (slot.compare_exchange_strong(seen, tagged, std::memory_order_relaxed) || seen == tagged) return;
      }
    }
    if (!overflowed_.load(std::memory_order_relaxed)) overflowed_.store(true, std::memory_order_relaxed);
  }

  std::vector<uint32_t> values() const {
    std::vector<uint32_t> out;
    for (const auto& slot : slots_)
      if (const uint64_t v = slot.load(std::memory_order_relaxed)) out.push_back(static_cast<uint32_t>(v - 1));
    return out;
  }
  bool overflowed() const { return overflowed_.load(std::memory_order_relaxed); }

 private:
  std::array<std::atomic<uint64_t>, kSlots> slots_{};
  std::atomic<bool> overflowed_{false};
};

}  // namespace tandem::preload
