#pragma once
// The C ABI of libtandem_timeline.so: the recorder behind `tandem run --timeline` (docs/RUN.md, "The
// timeline"). It collects the program's GPU activity through CUPTI's activity API (kernels, memory
// copies, memsets, NVTX ranges) into memory and hands the records back at the end.
//
// The interposer never links CUPTI, and neither does this library: the interposer chooses the one
// CUPTI of the process (the copy the program already loaded, e.g. PyTorch's, else the toolkit's;
// never a second one), dlopen()s this library at the first CUDA activity it sees, and passes a
// resolver that looks CUPTI's functions up in that very copy. Plain C types only, so the two sides
// share no C++ object (this library carries its own static C++ runtime). No function throws.
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Raised whenever a signature or a structure below changes: the interposer refuses another version.
#define TANDEM_TIMELINE_ABI_VERSION 2

// CUPTI's function `symbol` in the CUPTI the interposer chose, or NULL.
typedef void* (*tandem_timeline_resolve_fn)(const char* symbol);

typedef struct tandem_timeline_options {
  size_t buffer_bytes;   // each activity buffer handed to CUPTI
  uint64_t max_records;  // activity records kept at most; the others are counted as over_limit
  // Memory copy and memset API records with external correlation: a copy enqueued between
  // tandem_timeline_push_communication and _pop on the same thread is reported in
  // tandem_timeline_communication_correlations.
  int correlate_copies;
  // The driver's cuDriverGetVersion (the real one), or NULL for no marks: tandem_timeline_mark calls
  // it with CUPTI tracing that one API, so that its correlation id says where the mark falls among
  // the program's calls. Programs call it once at most, so its API records cost nothing.
  int (*mark_call)(int* version);
} tandem_timeline_options;

enum tandem_timeline_kind {
  TANDEM_TIMELINE_KERNEL = 0,
  TANDEM_TIMELINE_MEMCPY = 1,  // a copy on one device (or to or from the host)
  TANDEM_TIMELINE_MEMSET = 2,
  TANDEM_TIMELINE_PEER_COPY = 3,  // a copy between two devices
};

typedef struct tandem_timeline_activity {
  int64_t start_ns;  // CUPTI's clock (CLOCK_REALTIME on Linux, as CUPTI documents)
  int64_t end_ns;
  uint32_t device;               // CUPTI's device id
  uint32_t stream;               // CUPTI's stream id
  uint32_t name;                 // index into the names (kernels: the name as CUPTI reports it, usually mangled)
  uint32_t correlation;          // the driver or runtime call that issued it
  uint32_t runtime_correlation;  // copies: the runtime call's, 0 otherwise
  uint32_t dynamic_smem;         // kernels: the dynamic shared memory it ran with (bytes), 0 otherwise
  uint8_t kind;                  // tandem_timeline_kind
  uint8_t copy_kind;             // copies: CUpti_ActivityMemcpyKind
  uint8_t pad[2];
} tandem_timeline_activity;

// A mark (tandem_timeline_mark): its id and the correlation id CUPTI gave its call.
typedef struct tandem_timeline_mark_record {
  uint64_t id;
  uint32_t correlation;
  uint32_t pad;
} tandem_timeline_mark_record;

typedef struct tandem_timeline_counts {
  uint64_t records;      // activity records kept
  uint64_t dropped;      // records CUPTI says it dropped (cuptiActivityGetNumDroppedRecords)
  uint64_t incomplete;   // activity records without a valid end (still running at the last flush)
  uint64_t over_limit;   // activity records beyond max_records
  uint64_t buffers;      // buffers CUPTI filled and returned
  uint64_t api_records;  // API records of copies, memsets and marks (for their correlation only)
  uint64_t correlated;   // calls made between push_communication and pop
  uint64_t marks;        // marks whose correlation came back
} tandem_timeline_counts;

int tandem_timeline_abi_version(void);
// The SONAME of the CUPTI whose records this library reads ("libcupti.so.13"): the interposer binds it
// to the loaded copy of that name, or loads one.
const char* tandem_timeline_cupti_soname(void);

// Starts recording with the CUPTI `resolve` looks into: registers the buffer callbacks and enables
// the activity kinds. 0 on success; else non-zero with `why` filled (a CUPTI function missing, a
// CUPTI of another major version, a refused call). Call once; a failed start leaves CUPTI as it was
// found (every kind it enabled is disabled again).
int tandem_timeline_start(tandem_timeline_resolve_fn resolve, const tandem_timeline_options* options, char* why,
                          size_t why_size);

// The calling thread enters or leaves tandem's own communication work (an NCCL collective, the
// copy-engine route). Nothing when not recording.
void tandem_timeline_push_communication(void);
void tandem_timeline_pop_communication(void);

// A mark with this id (non-zero) in the order of the process's calls: see mark_call. Nothing when not
// recording or without mark_call.
void tandem_timeline_mark(uint64_t id);

// Stops recording: disables every kind it enabled and flushes CUPTI's buffers (forced), so that
// every record up to now is here. No CUPTI call is made after it. Idempotent. 0 on success.
int tandem_timeline_stop(char* why, size_t why_size);

// What was recorded, valid after tandem_timeline_stop and until the process ends (never freed).
const tandem_timeline_activity* tandem_timeline_activities(size_t* count);
const tandem_timeline_mark_record* tandem_timeline_marks(size_t* count);
size_t tandem_timeline_name_count(void);
const char* tandem_timeline_name(uint32_t index);  // "" for an index out of range
// The correlation ids of the calls made while communication was pushed, sorted, unique.
const uint32_t* tandem_timeline_communication_correlations(size_t* count);
void tandem_timeline_get_counts(tandem_timeline_counts* out);

// Every function above, by its name after "tandem_timeline_": the interposer binds the recorder
// through this list (one dlsym each), so a function added to the ABI is added here and bound, and a
// library that lacks one is refused.
#define TANDEM_TIMELINE_FUNCTIONS(X) \
  X(abi_version)                     \
  X(cupti_soname)                    \
  X(start)                           \
  X(push_communication)              \
  X(pop_communication)               \
  X(mark)                            \
  X(stop)                            \
  X(activities)                      \
  X(marks)                           \
  X(name_count)                      \
  X(name)                            \
  X(communication_correlations)      \
  X(get_counts)

#ifdef __cplusplus
}  // extern "C"
#endif
