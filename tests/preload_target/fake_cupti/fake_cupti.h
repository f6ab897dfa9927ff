#pragma once
// A fake CUPTI (libcupti.so.13) for testing the timeline end to end on machines without a GPU: the
// activity API functions the recorder and a profiler call (callbacks, enabling kinds, flushing,
// record iteration, external correlation, API records per callback id, NVTX's injection entry),
// writing records in CUPTI 13's own structures. Every call "issued" takes the next correlation id of
// one counter, as CUPTI's calls do. The test client plays the GPU's part: fake_cupti_* queues the
// records that "ran", and a flush hands them to whoever registered the callbacks at that moment.
#include <cstdint>

extern "C" {

// Queued only if the kind is enabled when called (as CUPTI records only enabled kinds).
void fake_cupti_kernel(const char* name, uint64_t start, uint64_t end, uint32_t device, uint32_t stream);
// The same, with the dynamic shared memory the kernel ran with.
void fake_cupti_kernel_with_smem(const char* name, uint64_t start, uint64_t end, uint32_t device, uint32_t stream,
                                 uint32_t dynamic_smem);
// A copy issued by an API call now: with EXTERNAL_CORRELATION enabled and an id pushed on this
// thread, an external correlation record names that call's correlation id first.
void fake_cupti_memcpy(uint64_t start, uint64_t end, uint32_t device, uint32_t stream);
// A driver API call (the fake driver's cuDriverGetVersion makes one): with the call's callback id
// enabled for API records and EXTERNAL_CORRELATION enabled, one external correlation record per kind
// with an id pushed on this thread names the call's correlation id.
void fake_cupti_api_call(uint32_t driver_cbid);
// Reported once by the next cuptiActivityGetNumDroppedRecords.
void fake_cupti_set_dropped(uint64_t dropped);

// What the fake saw.
int fake_cupti_registrations();        // cuptiActivityRegisterCallbacks calls
int fake_cupti_enabled(int kind);      // whether an activity kind is enabled now
int fake_cupti_api_records_enabled();  // driver + runtime callback ids whose calls give API records now
int fake_cupti_nvtx_inits();           // InitializeInjectionNvtx2 calls
int fake_cupti_correlation_depth();    // ids pushed and not popped, on this thread

}  // extern "C"
