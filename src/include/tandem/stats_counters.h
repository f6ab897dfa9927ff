#pragma once
// The interposer's single-number counters: X(field, JSON object, JSON key, unit, meaning). Each is a
// field of the interposer's Counters (atomic) and Snapshot (preload/stats.h), reset after fork,
// copied into the snapshot and written to the --stats document from this one list, and each is a
// field of the stats schema's record of that object (tandem/stats_schema.h), with its unit (a
// StatsUnit's name) and meaning; the text summary picks its own. The meanings are terse, one line
// each: a failure is a modified launch that failed and was retried as the program made it (or a
// shared-memory limit raised again after the program lowered it); cuBLAS's are what sm-target did,
// the targeted form deciding at cublasSetStream, beside an outstanding collective or not; an
// unconfigured communicator came from ncclCommInitAll or a configuration NCCL_CONFIG_INITIALIZER did
// not make (docs/BENCH_JSON.md).
#include "tandem/route_counters.h"

// A route counter (tandem/route_counters.h) as an interposer counter: copy_engine_NAME, the key NAME of
// "copy_engine_route", summed over the routes. `X` is TANDEM_STATS_COUNTERS' own.
#define TANDEM_ROUTE_TOTAL_COUNTER(name, unit, meaning, X) \
  X(copy_engine_##name, "copy_engine_route", #name, unit, meaning ", summed over the routes")

#define TANDEM_STATS_COUNTERS(X)                                                                                      \
  X(launches, "launches", "total", "launches", "kernel launches the hooks saw")                                       \
  X(collective_launches, "launches", "nccl", "launches", "of them, NCCL's kernels")                                   \
  X(compute_launches, "launches", "compute", "launches", "of them, every other kernel")                               \
  X(captured, "launches", "captured", "launches", "into a capturing stream, of those a control applies to")           \
  X(shaped_launch_failures, "failures", "shaped_retried_unshaped", "launches", "padded, failed, retried")             \
  X(elevated_launch_failures, "failures", "elevated_retried_as_issued", "launches", "elevated, failed, retried")      \
  X(cap_refreshes, "failures", "smem_limit_raised_again", "count", "raised again after the program lowered it")       \
  X(untracked_launches, "failures", "untracked_launches", "launches", "kernel table full, metadata unreadable")       \
  X(cublas_handles_capped, "cublas", "handles_capped", "count", "new cuBLAS handles given the target")                \
  X(cublaslt_descriptors_capped, "cublas", "lt_descriptors_capped", "count", "cuBLASLt descriptors given it")         \
  X(cublas_cap_failures, "cublas", "cap_failures", "count", "targets cuBLAS refused")                                 \
  X(cublas_gemms_capped_beside, "cublas", "gemms_capped_beside_collective", "calls", "capped beside a collective")    \
  X(cublas_gemms_left_alone, "cublas", "gemms_left_alone", "calls", "left every SM (no collective beside)")           \
  X(cublaslt_descriptors_left_alone, "cublas", "lt_descriptors_left_alone", "count", "left uncapped (targeted form)") \
  X(communicators_created, "nccl_communicators", "created", "count", "made by the program through the hooks")         \
  X(communicators_configured, "nccl_communicators", "configured", "count", "given the policy's nccl-* settings")      \
  X(communicators_unconfigured, "nccl_communicators", "unconfigured", "count", "settings asked for, not given")       \
  X(communicators_destroyed, "nccl_communicators", "destroyed", "count", "destroyed or aborted")                      \
  X(copy_engine_routes, "copy_engine_route", "routes", "count", "routes made: one per communicator that routed")      \
  TANDEM_ROUTE_COUNTERS_WITH(TANDEM_ROUTE_TOTAL_COUNTER, X)
