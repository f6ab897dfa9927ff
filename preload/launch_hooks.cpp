// The launch entry points: cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel and their
// _ptsz twins. Each handler describes its call as a Launch and runs it through one path:
//
//   count -> find the function's record (lock-free) -> forward unchanged, or apply a control.
//
// The path takes no lock, allocates nothing and does no string work once a function has been seen:
// the first launch of each function reads its metadata and inserts it (launch path cost is measured
// by tests/preload_target/launch_overhead.cu).
#include "function_metadata.h"
#include "hook_handlers.h"
#include "launch_controls.h"
#include "log.h"
#include "timeline_session.h"

namespace tandem::preload {
namespace {

FunctionRecord* record_for(Runtime& rt, const DriverApi& api, CUfunction f) {
  if (FunctionRecord* found = rt.functions.find(f)) return found;
  // First launch of this function. Nothing may escape a hook: on failure the launch goes untracked.
  try {
    return rt.functions.find_or_insert(f, [&] { return describe_function(f, api, rt.config); });
  } catch (...) {
    return nullptr;
  }
}

CUresult run_launch(Launch&& l) {
  Counters& count = counters();
  Counters::bump(count.launches);
  Counters::bump(count.calls_by_hook[index_of(l.entry)]);
  Runtime& rt = runtime();
  timeline_note_activity();  // the first launch starts the timeline when asked for (timeline_session.h)
  const DriverApi* api = driver_api();
  // A cuLaunchKernelEx without a configuration is the driver's to reject, unchanged.
  if (!api || !api->complete ||
      ((l.entry == Hook::cuLaunchKernelEx || l.entry == Hook::cuLaunchKernelEx_ptsz) && !l.config)) {
    Counters::bump(count.untracked_launches);
    return issue(l, l.shared_mem_bytes);
  }
  FunctionRecord* record = record_for(rt, *api, l.f);
  if (!record) {
    Counters::bump(count.untracked_launches);
    return issue(l, l.shared_mem_bytes);
  }
  record->launches.fetch_add(1, std::memory_order_relaxed);
  if (l.cluster_size == 0) l.cluster_size = record->required_cluster_size;
  const bool collective = record->kind == KernelKind::Collective;
  Counters::bump(collective ? count.collective_launches : count.compute_launches);
  if (!rt.config.controls_active()) return issue(l, l.shared_mem_bytes);
  return collective ? launch_collective(rt, *api, *record, l) : launch_compute(rt, *api, *record, l);
}

Launch launch_from_arguments(Hook entry, CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                             unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared_mem_bytes,
                             CUstream stream, void** kernel_params, void** extra) {
  Launch l;
  l.entry = entry;
  l.f = f;
  l.grid[0] = grid_x, l.grid[1] = grid_y, l.grid[2] = grid_z;
  l.block[0] = block_x, l.block[1] = block_y, l.block[2] = block_z;
  l.shared_mem_bytes = shared_mem_bytes;
  l.stream = stream;
  l.kernel_params = kernel_params;
  l.extra = extra;
  l.per_thread_stream = entry == Hook::cuLaunchKernel_ptsz || entry == Hook::cuLaunchCooperativeKernel_ptsz;
  l.cooperative = entry == Hook::cuLaunchCooperativeKernel || entry == Hook::cuLaunchCooperativeKernel_ptsz;
  return l;
}

}  // namespace

CUresult handle_cuLaunchKernel(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                               unsigned block_y, unsigned block_z, unsigned shared_mem_bytes, CUstream stream,
                               void** kernel_params, void** extra) {
  return run_launch(launch_from_arguments(Hook::cuLaunchKernel, f, grid_x, grid_y, grid_z, block_x, block_y, block_z,
                                          shared_mem_bytes, stream, kernel_params, extra));
}

CUresult handle_cuLaunchKernel_ptsz(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                                    unsigned block_y, unsigned block_z, unsigned shared_mem_bytes, CUstream stream,
                                    void** kernel_params, void** extra) {
  return run_launch(launch_from_arguments(Hook::cuLaunchKernel_ptsz, f, grid_x, grid_y, grid_z, block_x, block_y,
                                          block_z, shared_mem_bytes, stream, kernel_params, extra));
}

CUresult handle_cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernel_params, void** extra) {
  return run_launch(launch_from_config(Hook::cuLaunchKernelEx, config, f, kernel_params, extra));
}

CUresult handle_cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** kernel_params, void** extra) {
  return run_launch(launch_from_config(Hook::cuLaunchKernelEx_ptsz, config, f, kernel_params, extra));
}

CUresult handle_cuLaunchCooperativeKernel(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                          unsigned block_x, unsigned block_y, unsigned block_z,
                                          unsigned shared_mem_bytes, CUstream stream, void** kernel_params) {
  return run_launch(launch_from_arguments(Hook::cuLaunchCooperativeKernel, f, grid_x, grid_y, grid_z, block_x, block_y,
                                          block_z, shared_mem_bytes, stream, kernel_params, nullptr));
}

CUresult handle_cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                               unsigned block_x, unsigned block_y, unsigned block_z,
                                               unsigned shared_mem_bytes, CUstream stream, void** kernel_params) {
  return run_launch(launch_from_arguments(Hook::cuLaunchCooperativeKernel_ptsz, f, grid_x, grid_y, grid_z, block_x,
                                          block_y, block_z, shared_mem_bytes, stream, kernel_params, nullptr));
}

}  // namespace tandem::preload
