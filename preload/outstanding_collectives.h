#pragma once
// Which compute may run beside communication: the rule behind the targeted form of shape and
// sm-target (docs/RUN.md, "Targeted compute controls").
//
// Work enqueued on stream S may run beside an NCCL kernel launched earlier on another stream T of the
// same device unless
//   - that kernel has completed (the event recorded on T after it reports ready), or
//   - S is ordered after it: S waited (cuStreamWaitEvent) on an event recorded on T after it, which
//     is how PyTorch's work.wait(), DDP's finalisation and FSDP2's stream hand-offs order the compute
//     stream after a collective.
// Work on T itself runs after T's kernels and never beside them. Orderings are followed through other
// streams too: S waits on an event recorded on U after U waited on T (FSDP2 hands its all-gather
// copy-in stream the compute stream's order this way; PyTorch's process groups order their callers'
// streams after the NCCL stream). Orderings the hooks cannot see (a host synchronisation, an event
// forgotten by the tables below) count as none: the rule errs towards applying the control, never
// towards leaving a collective's neighbour unshaped.
//
// Bookkeeping: each stream that carries NCCL kernels gets a slot with a generation (how many NCCL
// launches it has had) and one event re-recorded after each of them. A stream's seen generations say,
// per slot, which NCCL launch the stream's future work is ordered after. An event the program records
// takes the recording stream's seen generations, and for a collective stream its own latest
// generation; a wait on it raises the waiting stream's seen generations to the event's. A compute
// launch then asks, per slot of its device: is a generation beyond what this stream has seen and
// beyond what is known complete still running? One event query per slot with work outstanding; none
// once the latest generation is known complete, so a phase with no communication costs a couple of
// relaxed loads per launch.
//
// Special stream handles (the legacy and per-thread default streams) are per context, so their slots
// and seen entries are per device; other stream handles are unique in the process.
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>

#include "cuda_driver.h"
#include "driver_api.h"

namespace tandem::preload {

class OutstandingCollectives {
 public:
  // At most this many streams carrying NCCL kernels are followed (PyTorch uses one per process group
  // and device); a launch on a further one is not followed, and compute beside it counts as alone.
  static constexpr int kMaxCollectiveStreams = 16;

  // After an NCCL kernel was launched on `stream` of `device` (not under capture): its event is
  // re-recorded there and the stream's generation advances. Best effort: without an event the
  // stream is not followed.
  void note_collective_launch(const DriverApi&, int device, CUstream stream);
  // cuEventRecord(event, stream) by the program: `device` is the current device, needed only for the
  // special stream handles (nullopt where unknown).
  void note_event_record(CUevent event, CUstream stream, std::optional<int> device);
  // cuStreamWaitEvent(stream, event) by the program.
  void note_stream_wait(CUstream stream, CUevent event, std::optional<int> device);
  // Whether work enqueued now on `stream` of `device` may run beside an NCCL kernel (the rule above).
  // With no stream (a cuBLASLt descriptor, which is created before its stream is known) any
  // outstanding NCCL kernel of the device counts. Non-blocking: event queries only.
  bool beside_collective(const DriverApi&, int device, std::optional<CUstream> stream);
  // Whether any stream carrying NCCL kernels has been seen (the event hooks do nothing before).
  bool following() const { return stream_count_.load(std::memory_order_acquire) > 0; }

  void lock_for_fork() { mutex_.lock(); }
  void unlock_after_fork() { mutex_.unlock(); }

 private:
  struct CollectiveStream {
    CUstream stream = nullptr;  // written before the slot is published (stream_count_)
    int device = -1;
    CUevent event = nullptr;
    std::atomic<uint64_t> launched{0};  // NCCL launches on this stream so far: the latest generation
    std::atomic<uint64_t> finished{0};  // a generation known to have completed
  };
  // A stream's seen generation per collective slot, for the streams that waited on a collective's event.
  static constexpr int kSeenEntries = 256;
  struct SeenEntry {
    std::atomic<uintptr_t> key{0};  // stream handle (+ device for special handles); 0: free; kBusy: being rewritten
    std::array<std::atomic<uint64_t>, kMaxCollectiveStreams> seen{};
  };
  // The program's events that follow a collective: per slot, the generation each is ordered after.
  static constexpr int kEventEntries = 4096;
  using Generations = std::array<uint64_t, kMaxCollectiveStreams>;
  struct EventEntry {
    CUevent event = nullptr;
    Generations generations{};
  };

  int slot_of(CUstream stream, int device) const;  // -1 when `stream` carries no followed NCCL kernel
  const SeenEntry* seen_of(uintptr_t key) const;

  std::array<CollectiveStream, kMaxCollectiveStreams> streams_{};
  std::atomic<int> stream_count_{0};
  std::array<SeenEntry, kSeenEntries> seen_{};
  std::array<EventEntry, kEventEntries> events_{};  // direct-mapped by the event handle, under mutex_
  std::mutex mutex_;                                // slot insertion, the event map, seen entries' rewrites
};

// The key of a stream in the seen table: its handle, or for a special handle (0, CU_STREAM_LEGACY,
// CU_STREAM_PER_THREAD) the handle and the device; nullopt for a special handle of unknown device.
std::optional<uintptr_t> stream_key(CUstream stream, std::optional<int> device);

}  // namespace tandem::preload
