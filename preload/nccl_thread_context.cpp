// What this thread is inside (nccl_thread_context.h): two counters per thread.
#include "nccl_thread_context.h"

namespace tandem::preload {
namespace {

thread_local int t_inside_tandem = 0;
thread_local int t_group_depth = 0;

}  // namespace

bool inside_tandem() { return t_inside_tandem > 0; }
InsideTandem::InsideTandem() { ++t_inside_tandem; }
InsideTandem::~InsideTandem() { --t_inside_tandem; }

void group_started() { ++t_group_depth; }
bool group_ended() {
  if (t_group_depth == 0) return false;
  return --t_group_depth == 0;
}
bool inside_group() { return t_group_depth > 0; }

}  // namespace tandem::preload
