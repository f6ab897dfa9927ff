// cuptiActivityRegisterCallbacks: a program's profiler (torch.profiler's Kineto, or any CUPTI
// client) takes CUPTI's activity buffers. CUPTI keeps one pair of buffer callbacks per process, so the
// timeline hands CUPTI over before the program's registration goes through (timeline_session.h): its own
// kinds disabled, its buffers flushed back to it. The program then gets exactly what CUPTI answers,
// and a profile holding only its own records.
//
// The timeline's recorder registers its callbacks through a pointer looked up in CUPTI itself
// (timeline_session.cpp: resolve_cupti), never through this hook, so every call seen here is the program's.
#include "hook_handlers.h"
#include "runtime.h"
#include "timeline_session.h"

namespace tandem::preload {

int handle_cuptiActivityRegisterCallbacks(void* request, void* complete) {
  Counters::bump(counters().calls_by_hook[index_of(Hook::cuptiActivityRegisterCallbacks)]);
  const auto real = real_cuptiActivityRegisterCallbacks();
  // CUPTI_ERROR_NOT_INITIALIZED: reached only by a program that calls CUPTI without one loaded.
  if (!real) return 15;
  timeline_yield_cupti();
  return real(request, complete);
}

}  // namespace tandem::preload
