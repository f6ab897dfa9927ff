#pragma once
// A fake CUPTI (libcupti.so.13) for testing the timeline end to end on machines without a GPU: the
// activity API functions the recorder and a profiler call (callbacks, enabling kinds, flushing,
// record iteration, external correlation, NVTX's injection entry), writing records in CUPTI 13's own
// structures. The test client plays the GPU's part: fake_cupti_* queues the records that "ran", and
// a flush hands them, in one buffer, to whoever registered the callbacks at that moment.
#include <cstdint>

extern "C" {

// Queued only if the kind is enabled when called (as CUPTI records only enabled kinds).
void fake_cupti_kernel(const char* name, uint64_t start, uint64_t end, uint32_t device, uint32_t stream);
// A copy issued by an API call now: with EXTERNAL_CORRELATION enabled and an id pushed on this
// thread, an external correlation record names that call's correlation id first.
void fake_cupti_memcpy(uint64_t start, uint64_t end, uint32_t device, uint32_t stream);
void fake_cupti_range(const char* name, uint64_t start, uint64_t end);
// Reported once by the next cuptiActivityGetNumDroppedRecords.
void fake_cupti_set_dropped(uint64_t dropped);

// What the fake saw.
int fake_cupti_registrations();        // cuptiActivityRegisterCallbacks calls
int fake_cupti_enabled(int kind);      // whether an activity kind is enabled now
int fake_cupti_api_records_enabled();  // driver + runtime callback ids enabled for API records now
int fake_cupti_nvtx_inits();           // InitializeInjectionNvtx2 calls
int fake_cupti_correlation_depth();    // ids pushed and not popped, on this thread

}  // extern "C"
