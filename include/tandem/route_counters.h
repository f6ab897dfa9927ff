#ifndef TANDEM_ROUTE_COUNTERS_H
#define TANDEM_ROUTE_COUNTERS_H
/* The copy-engine route's counters, one line each: X(name, unit, meaning). The one list behind
 * tandem::CopyEngineRouteStats (copy_engine_route.h), the C ABI's tandem_nccl_route_stats
 * (preload/route/tandem_nccl_route.h: the same fields, in this order), the interposer's
 * "copy_engine_route" totals, tandem._cuda's route.stats() and the stats schema's "route" record
 * (tandem/stats_schema.h; python/tandem/stats_schema.json). A C header (the C ABI includes it): a
 * counter added here reaches every one of them; adding one changes the C ABI, so
 * TANDEM_NCCL_ROUTE_ABI_VERSION is raised with it. Units are the stats schema's (StatsUnit). */

/* The list, with an extra argument `A` handed to every X (a list that expands into another X-list). */
#define TANDEM_ROUTE_COUNTERS_WITH(X, A)                                                                    \
  X(calls, "calls", "collective calls that took the route (a captured call once, at its capture)", A)       \
  X(captured, "calls", "of those, calls captured into a CUDA graph", A)                                     \
  X(staged_bytes, "B", "bytes copied into and out of window memory", A)                                     \
  X(peer_bytes, "B", "bytes copied between the caller's memory and the peers' window memory, unstaged", A)  \
  X(peer_copies_unavailable, "count",                                                                       \
    "peer copies asked for where NCCL maps not every peer's window, so staged (1 per such route)", A)       \
  X(pool_bytes, "B", "window memory held now (the staging pools and the window buffers)", A)                \
  X(buffer_bytes, "B", "of that, the window buffers lent to the caller (its data lies there, unstaged)", A) \
  X(registrations, "count", "window registrations: a pool each time it was registered, a buffer once", A)

#define TANDEM_ROUTE_COUNTER_APPLY(name, unit, meaning, X) X(name, unit, meaning)
/* The list: X(name, unit, meaning). */
#define TANDEM_ROUTE_COUNTERS(X) TANDEM_ROUTE_COUNTERS_WITH(TANDEM_ROUTE_COUNTER_APPLY, X)

#endif /* TANDEM_ROUTE_COUNTERS_H */
