#include "outstanding_collectives.h"

#include <algorithm>

namespace tandem::preload {
namespace {

// Special handles name a context's default streams: 0 and CU_STREAM_LEGACY (the legacy stream),
// CU_STREAM_PER_THREAD (the calling thread's).
bool is_special(CUstream stream) { return reinterpret_cast<uintptr_t>(stream) <= 2; }

// A seen entry being rewritten; never a stream key (keys of special handles are 1 + handle + 4 * device).
constexpr uintptr_t kBusy = ~uintptr_t{0};

size_t hash_of(uintptr_t value, size_t buckets) {
  // Handles are aligned allocations: mix the bits before taking the bucket.
  value ^= value >> 17;
  value *= 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(value >> 32) % buckets;
}

void raise_to(std::atomic<uint64_t>& value, uint64_t at_least) {
  uint64_t now = value.load(std::memory_order_relaxed);
  while (now < at_least && !value.compare_exchange_weak(now, at_least, std::memory_order_relaxed)) {
  }
}

}  // namespace

std::optional<uintptr_t> stream_key(CUstream stream, std::optional<int> device) {
  const auto handle = reinterpret_cast<uintptr_t>(stream);
  if (!is_special(stream)) return handle;
  if (!device || *device < 0) return std::nullopt;
  return 1 + handle + 4 * static_cast<uintptr_t>(*device);
}

int OutstandingCollectives::slot_of(CUstream stream, int device) const {
  const int count = stream_count_.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i)
    if (streams_[i].stream == stream && (!is_special(stream) || streams_[i].device == device)) return i;
  return -1;
}

void OutstandingCollectives::note_collective_launch(const DriverApi& api, int device, CUstream stream) {
  int slot = slot_of(stream, device);
  if (slot < 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    slot = slot_of(stream, device);
    const int count = stream_count_.load(std::memory_order_relaxed);
    if (slot < 0 && count < kMaxCollectiveStreams) {
      CollectiveStream& s = streams_[count];
      // Timing disabled: recording and querying are then the cheapest the driver offers.
      const RelaxedCaptureMode relaxed(api);
      if (api.cuEventCreate(&s.event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return;
      s.stream = stream;
      s.device = device;
      stream_count_.store(count + 1, std::memory_order_release);
      slot = count;
    }
    if (slot < 0) return;  // every slot taken: this stream is not followed
  }
  CollectiveStream& s = streams_[slot];
  // Record first, then advance: a reader that sees generation G queries an event recorded after
  // launch G or a later one of the same stream, and a later one completing implies G completed.
  if (api.cuEventRecord(s.event, stream) == CUDA_SUCCESS) s.launched.fetch_add(1, std::memory_order_release);
}

void OutstandingCollectives::note_event_record(CUevent event, CUstream stream, std::optional<int> device) {
  if (!event || !following()) return;
  const int slot = slot_of(stream, device.value_or(-1));
  const auto key = stream_key(stream, device);
  EventEntry& entry = events_[hash_of(reinterpret_cast<uintptr_t>(event), kEventEntries)];
  std::lock_guard<std::mutex> lock(mutex_);
  // The event completes after the work enqueued on `stream` so far: after whatever that work is
  // ordered after (the stream's seen generations; their rewrites happen under mutex_, so the copy is
  // one stream's) and, on a collective stream, after its own NCCL launches so far.
  Generations follows{};
  if (const SeenEntry* seen = key ? seen_of(*key) : nullptr)
    for (int i = 0; i < kMaxCollectiveStreams; ++i) follows[i] = seen->seen[i].load(std::memory_order_relaxed);
  if (slot >= 0) follows[slot] = std::max(follows[slot], streams_[slot].launched.load(std::memory_order_acquire));
  if (std::any_of(follows.begin(), follows.end(), [](uint64_t generation) { return generation > 0; })) {
    // Direct-mapped: an older event in this bucket is forgotten, and a wait on it counts as no
    // ordering (the compute after it is then treated as beside communication).
    entry = {event, follows};
  } else if (entry.event == event) {
    entry = {};  // re-recorded where nothing follows a collective: it no longer orders its waiters
  }
}

void OutstandingCollectives::note_stream_wait(CUstream stream, CUevent event, std::optional<int> device) {
  if (!event || !following()) return;
  const auto key = stream_key(stream, device);
  if (!key) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const EventEntry& entry = events_[hash_of(reinterpret_cast<uintptr_t>(event), kEventEntries)];
  if (entry.event != event) return;
  SeenEntry& seen = seen_[hash_of(*key, kSeenEntries)];
  if (seen.key.load(std::memory_order_relaxed) != *key) {
    // Another stream's entry (or none): rewritten for this stream. Readers that see kBusy or another
    // key ignore the entry, so they never mix two streams' generations.
    seen.key.store(kBusy, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    for (auto& generation : seen.seen) generation.store(0, std::memory_order_relaxed);
    seen.key.store(*key, std::memory_order_release);
  }
  for (int i = 0; i < kMaxCollectiveStreams; ++i) raise_to(seen.seen[i], entry.generations[i]);
}

const OutstandingCollectives::SeenEntry* OutstandingCollectives::seen_of(uintptr_t key) const {
  const SeenEntry& seen = seen_[hash_of(key, kSeenEntries)];
  return seen.key.load(std::memory_order_acquire) == key ? &seen : nullptr;
}

bool OutstandingCollectives::beside_collective(const DriverApi& api, int device, std::optional<CUstream> stream) {
  const int count = stream_count_.load(std::memory_order_acquire);
  if (count == 0) return false;
  const SeenEntry* seen = nullptr;
  std::optional<uintptr_t> key;
  if (stream) key = stream_key(*stream, device);
  for (int i = 0; i < count; ++i) {
    CollectiveStream& s = streams_[i];
    if (s.device != device) continue;
    const uint64_t latest = s.launched.load(std::memory_order_acquire);
    if (latest == 0 || s.finished.load(std::memory_order_relaxed) >= latest) continue;
    if (stream) {
      if (s.stream == *stream) continue;  // the same stream: after the collective, never beside it
      if (key && !seen) seen = seen_of(*key);
      if (seen) {
        const uint64_t ordered_after = seen->seen[i].load(std::memory_order_relaxed);
        // The entry may have been taken over by another stream meanwhile: trust it only if it is still ours.
        if (ordered_after >= latest && seen->key.load(std::memory_order_acquire) == *key) continue;
      }
    }
    const CUresult status = api.cuEventQuery(s.event);
    if (status == CUDA_ERROR_NOT_READY) return true;
    if (status == CUDA_SUCCESS) raise_to(s.finished, latest);
  }
  return false;
}

}  // namespace tandem::preload
