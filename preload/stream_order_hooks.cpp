// cuEventRecord, cuEventRecordWithFlags, cuStreamWaitEvent and their _ptsz twins: forwarded unchanged;
// while the targeted form of shape or sm-target follows NCCL's streams, each also tells
// OutstandingCollectives how the program orders its streams after its collectives (an event recorded
// on a collective's stream, a stream waiting on it). The record is noted after the real call
// succeeded, and only then: an event the driver refused orders nothing.
#include "hook_handlers.h"
#include "runtime.h"

namespace tandem::preload {
namespace {

// A _ptsz entry point's stream 0 is the calling thread's default stream (as Launch does).
CUstream as_called(CUstream stream, bool per_thread) {
  return per_thread && stream == nullptr ? CU_STREAM_PER_THREAD : stream;
}

// The current device, asked only for a special stream handle (0, legacy, per-thread), whose meaning
// depends on the context: other handles name one stream of the process.
std::optional<int> device_for(CUstream stream) {
  if (reinterpret_cast<uintptr_t>(stream) > 2) return std::nullopt;
  const DriverApi* api = driver_api();
  return api && api->cuCtxGetDevice ? current_device(*api) : std::nullopt;
}

// Whether the program's stream ordering is followed at all: a targeted compute control is set and an
// NCCL kernel has been launched. Otherwise the hooks only count and forward.
Runtime* following() {
  Runtime& rt = runtime();
  return rt.config.targets_compute() && rt.outstanding.following() ? &rt : nullptr;
}

template <class Real, class... Rest>
CUresult record(Hook via, Real real, bool per_thread, CUevent event, CUstream stream, Rest... rest) {
  Counters::bump(counters().calls_by_hook[index_of(via)]);
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult result = real(event, stream, rest...);
  if (result != CUDA_SUCCESS) return result;
  if (Runtime* rt = following()) {
    const CUstream s = as_called(stream, per_thread);
    rt->outstanding.note_event_record(event, s, device_for(s));
  }
  return result;
}

CUresult wait(Hook via, cuStreamWaitEvent_fn real, bool per_thread, CUstream stream, CUevent event, unsigned flags) {
  Counters::bump(counters().calls_by_hook[index_of(via)]);
  if (!real) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult result = real(stream, event, flags);
  if (result != CUDA_SUCCESS) return result;
  if (Runtime* rt = following()) {
    const CUstream s = as_called(stream, per_thread);
    rt->outstanding.note_stream_wait(s, event, device_for(s));
  }
  return result;
}

}  // namespace

CUresult handle_cuEventRecord(CUevent event, CUstream stream) {
  return record(Hook::cuEventRecord, real_cuEventRecord(), false, event, stream);
}
CUresult handle_cuEventRecord_ptsz(CUevent event, CUstream stream) {
  return record(Hook::cuEventRecord_ptsz, real_cuEventRecord_ptsz(), true, event, stream);
}
CUresult handle_cuEventRecordWithFlags(CUevent event, CUstream stream, unsigned flags) {
  return record(Hook::cuEventRecordWithFlags, real_cuEventRecordWithFlags(), false, event, stream, flags);
}
CUresult handle_cuEventRecordWithFlags_ptsz(CUevent event, CUstream stream, unsigned flags) {
  return record(Hook::cuEventRecordWithFlags_ptsz, real_cuEventRecordWithFlags_ptsz(), true, event, stream, flags);
}
CUresult handle_cuStreamWaitEvent(CUstream stream, CUevent event, unsigned flags) {
  return wait(Hook::cuStreamWaitEvent, real_cuStreamWaitEvent(), false, stream, event, flags);
}
CUresult handle_cuStreamWaitEvent_ptsz(CUstream stream, CUevent event, unsigned flags) {
  return wait(Hook::cuStreamWaitEvent_ptsz, real_cuStreamWaitEvent_ptsz(), true, stream, event, flags);
}

}  // namespace tandem::preload
