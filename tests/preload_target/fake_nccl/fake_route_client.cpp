// A stand-in for a program whose collectives the copy-engine route should take, linked against the
// fake libnccl.so.2 (fake_nccl.h) and run under the interposer with the fake route library
// (fake_route.cpp) by tests/cpu/test_preload_nccl_hooks.cpp. It issues every kind of call the route
// decision tells apart - reductions (sum, average, pre-multiplied sums with host and device scalars,
// min/max), counts that do not split over the ranks, types without a sum kernel, groups of one and of
// several collectives (nested, mixed with calls NCCL keeps, over two communicators, over two devices,
// first collectives of communicators, communicators destroyed or aborted inside a group), a capture, a
// non-blocking communicator and its group polled by the program, failures - and prints
// one JSON object: each step's result and errno, and the one log of what NCCL received and what the
// route ran, in order.
#include <cuda_bf16.h>

#include <cerrno>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "client_steps.h"
#include "fake_nccl.h"

namespace {

using json = nlohmann::json;

using fake_nccl_client::step;
json& g_steps = fake_nccl_client::steps();

// A mark in the log, so the test can find where each step's calls start.
void mark(const std::string& name) { fake_nccl_record(json({{"fn", "mark"}, {"step", name}}).dump().c_str()); }

cudaStream_t stream_number(uintptr_t n) { return reinterpret_cast<cudaStream_t>(n); }

}  // namespace

int main() {
  ncclUniqueId id{};
  alignas(16) char send[4096] = {}, recv[4096] = {};
  const cudaStream_t s1 = stream_number(0x1), s2 = stream_number(0x2);

  ncclComm_t two = nullptr, three = nullptr, non_blocking = nullptr;
  step("init_two", [&] { return ncclCommInitRank(&two, 2, id, 1); });
  step("init_three", [&] { return ncclCommInitRank(&three, 3, id, 2); });
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  step("init_non_blocking", [&] { return ncclCommInitRankConfig(&non_blocking, 2, id, 0, &config); });
  fake_nccl_finish_init(non_blocking);
  // One process a GPU, as PyTorch and JAX run: every communicator on device 0; `other_device` is a rank
  // this thread drives on a second GPU (as ncclCommInitAll users and XLA with several GPUs do).
  ncclComm_t other_device = nullptr;
  step("init_other_device", [&] { return ncclCommInitRank(&other_device, 2, id, 0); });
  fake_nccl_set_device(other_device, 1);
  // Communicators whose first collective is inside a group: two ranks this thread drives on devices 0
  // and 1 (ncclCommInitAll's), and one more on device 0.
  ncclComm_t first_use[2] = {nullptr, nullptr}, new_on_zero = nullptr;
  step("init_all_first_use", [&] { return ncclCommInitAll(first_use, 2, nullptr); });
  step("init_new_on_zero", [&] { return ncclCommInitRank(&new_on_zero, 2, id, 1); });
  // Communicators the program destroys or aborts inside a group that holds a collective on them.
  ncclComm_t destroyed = nullptr, aborted = nullptr, destroyed_beside_other_device = nullptr;
  step("init_destroyed", [&] { return ncclCommInitRank(&destroyed, 2, id, 1); });
  step("init_aborted", [&] { return ncclCommInitRank(&aborted, 2, id, 1); });
  step("init_destroyed_beside", [&] { return ncclCommInitRank(&destroyed_beside_other_device, 2, id, 1); });

  // Reductions the route computes.
  mark("sum");
  step("sum", [&] { return ncclAllReduce(send, recv, 8, ncclBfloat16, ncclSum, two, s1); });
  mark("avg_uneven");
  step("avg_uneven", [&] { return ncclAllReduce(send, recv, 7, ncclFloat16, ncclAvg, three, s1); });
  mark("premul_host");
  ncclRedOp_t half_op{};
  __nv_bfloat16 half = __float2bfloat16(0.5f);
  step("create_premul_host",
       [&] { return ncclRedOpCreatePreMulSum(&half_op, &half, ncclBfloat16, ncclScalarHostImmediate, two); });
  half = __float2bfloat16(4.0f);  // read when the op was made: no effect
  step("premul_host", [&] { return ncclAllReduce(send, recv, 16, ncclBfloat16, half_op, two, s1); });
  mark("premul_device");
  ncclRedOp_t device_op{};
  void* device_scalar = recv + 1024;
  g_steps["device_scalar_address"] = reinterpret_cast<uintptr_t>(device_scalar);
  step("create_premul_device",
       [&] { return ncclRedOpCreatePreMulSum(&device_op, device_scalar, ncclFloat32, ncclScalarDevice, two); });
  step("premul_device", [&] { return ncclReduceScatter(send, recv, 4, ncclFloat32, device_op, two, s1); });
  mark("premul_destroyed");
  step("destroy_premul_host", [&] { return ncclRedOpDestroy(half_op, two); });
  step("premul_destroyed", [&] { return ncclAllReduce(send, recv, 16, ncclBfloat16, half_op, two, s1); });
  mark("reduce_scatter_avg");
  step("reduce_scatter_avg", [&] { return ncclReduceScatter(send, recv, 5, ncclFloat32, ncclAvg, three, s1); });

  // Moves of any type; what stays with NCCL.
  mark("moves");
  step("all_gather_int64", [&] { return ncclAllGather(send, recv, 3, ncclInt64, two, s1); });
  step("all_to_all_uint8", [&] { return ncclAlltoAll(send, recv, 5, ncclUint8, two, s1); });
  step("broadcast", [&] { return ncclBroadcast(send, recv, 16, ncclFloat32, 1, two, s1); });
  step("bcast", [&] { return ncclBcast(recv, 16, ncclFloat32, 0, two, s1); });
  mark("nccl_keeps");
  step("max", [&] { return ncclAllReduce(send, recv, 8, ncclFloat32, ncclMax, two, s1); });
  step("fp64_sum", [&] { return ncclAllReduce(send, recv, 8, ncclFloat64, ncclSum, two, s1); });
  step("empty", [&] { return ncclAllReduce(send, recv, 0, ncclFloat32, ncclSum, two, s1); });
  step("broadcast_bad_root", [&] { return ncclBroadcast(send, recv, 16, ncclFloat32, 2, two, s1); });
  step("captured_before_setup",
       [&] { return ncclAllReduce(send, recv, 8, ncclBfloat16, ncclSum, two, kFakeCapturingStream); });

  // Groups.
  mark("group_of_one");
  step("group_of_one_start", [&] { return ncclGroupStart(); });
  step("group_of_one_call", [&] { return ncclAllReduce(send, recv, 8, ncclBfloat16, ncclSum, two, s1); });
  mark("group_of_one_before_end");
  step("group_of_one_end", [&] { return ncclGroupEnd(); });
  mark("group_mixed");
  step("group_mixed_start", [&] { return ncclGroupStart(); });
  step("group_mixed_sum", [&] { return ncclAllReduce(send, recv, 8, ncclBfloat16, ncclSum, two, s1); });
  step("group_mixed_gather", [&] { return ncclAllGather(send, recv, 4, ncclBfloat16, two, s1); });
  step("group_mixed_max", [&] { return ncclAllReduce(send, recv, 8, ncclFloat32, ncclMax, two, s1); });
  step("group_mixed_broadcast", [&] { return ncclBroadcast(send, recv, 6, ncclUint8, 1, two, s1); });
  step("group_mixed_end", [&] { return ncclGroupEnd(); });
  mark("group_nested");
  step("group_nested_outer_start", [&] { return ncclGroupStart(); });
  step("group_nested_inner_start", [&] { return ncclGroupStart(); });
  step("group_nested_first", [&] { return ncclAllReduce(send, recv, 8, ncclBfloat16, ncclSum, two, s1); });
  step("group_nested_inner_end", [&] { return ncclGroupEnd(); });
  mark("group_nested_after_inner_end");
  step("group_nested_second", [&] { return ncclReduceScatter(send, recv, 4, ncclBfloat16, ncclSum, two, s2); });
  step("group_nested_outer_end", [&] { return ncclGroupEnd(); });
  mark("group_two_communicators");
  step("group_two_start", [&] { return ncclGroupStart(); });
  step("group_two_on_three", [&] { return ncclAllReduce(send, recv, 9, ncclFloat32, ncclSum, three, s2); });
  step("group_two_on_two", [&] { return ncclAllGather(send, recv, 4, ncclFloat32, two, s1); });
  step("group_two_end", [&] { return ncclGroupEnd(); });

  mark("group_several_devices");
  step("group_devices_start", [&] { return ncclGroupStart(); });
  step("group_devices_first", [&] { return ncclAllReduce(send, recv, 8, ncclBfloat16, ncclAvg, two, s1); });
  step("group_devices_second", [&] { return ncclAllReduce(send, recv, 8, ncclBfloat16, ncclAvg, other_device, s2); });
  step("group_devices_bcast", [&] { return ncclBcast(recv, 5, ncclInt32, 1, other_device, s2); });
  step("group_devices_end", [&] { return ncclGroupEnd(); });

  // NCCL refuses one of the calls of a group over several devices, handed back to it at the group's end:
  // the program learns it from ncclGroupEnd (without the interposer, from the call itself).
  mark("group_several_devices_refused");
  step("group_refused_start", [&] { return ncclGroupStart(); });
  step("group_refused_first",
       [&] { return ncclAllReduce(send, recv, kFakeNcclFailingCount, ncclFloat32, ncclSum, two, s1); });
  step("group_refused_second", [&] { return ncclAllReduce(send, recv, 8, ncclBfloat16, ncclSum, other_device, s2); });
  step("group_refused_end", [&] { return ncclGroupEnd(); });

  // The standard single-process pattern: the first collectives of ranks on two devices, in one group.
  // The devices are known from the first call: the group stays NCCL's, as the program issued it.
  mark("group_first_use_several_devices");
  step("group_first_use_start", [&] { return ncclGroupStart(); });
  step("group_first_use_rank0", [&] { return ncclAllReduce(send, recv, 8, ncclBfloat16, ncclSum, first_use[0], s1); });
  step("group_first_use_rank1", [&] { return ncclAllReduce(send, recv, 8, ncclBfloat16, ncclSum, first_use[1], s2); });
  step("group_first_use_end", [&] { return ncclGroupEnd(); });

  // A new and a used communicator, both on device 0, in one group: one route group.
  mark("group_new_and_used_one_device");
  step("group_new_and_used_start", [&] { return ncclGroupStart(); });
  step("group_new_and_used_new", [&] { return ncclAllReduce(send, recv, 8, ncclBfloat16, ncclSum, new_on_zero, s1); });
  step("group_new_and_used_used", [&] { return ncclAllGather(send, recv, 4, ncclBfloat16, two, s1); });
  step("group_new_and_used_end", [&] { return ncclGroupEnd(); });

  // NCCL's own ncclGroupEnd fails: the group's routed call is never run, the program gets NCCL's error
  // and errno; the communicator's route is not to blame, and the next call after the group takes it.
  mark("group_nccl_fails");
  step("group_nccl_fails_start", [&] { return ncclGroupStart(); });
  step("group_nccl_fails_call", [&] { return ncclAllReduce(send, recv, 8, ncclBfloat16, ncclSum, two, s1); });
  fake_nccl_fail_next_group_end(ncclSystemError);
  step("group_nccl_fails_end", [&] { return ncclGroupEnd(); });
  mark("after_failed_group");
  step("after_failed_group", [&] { return ncclAllGather(send, recv, 4, ncclFloat16, two, s1); });

  // A non-blocking communicator, once ready.
  mark("non_blocking");
  step("non_blocking", [&] { return ncclAllReduce(send, recv, 8, ncclBfloat16, ncclSum, non_blocking, s1); });

  // A group whose NCCL part (a send, which no route takes) is still being enqueued when ncclGroupEnd
  // returns, on a non-blocking communicator: the routed call waits until that communicator is done.
  mark("group_nccl_part_in_progress");
  step("group_in_progress_start", [&] { return ncclGroupStart(); });
  step("group_in_progress_send", [&] { return ncclSend(send, 4, ncclFloat32, 1, non_blocking, s1); });
  step("group_in_progress_routed",
       [&] { return ncclAllReduce(send, recv, 8, ncclBfloat16, ncclSum, non_blocking, s1); });
  fake_nccl_next_group_end_in_progress(non_blocking, 2);
  step("group_in_progress_end", [&] { return ncclGroupEnd(); });
  // The program polls until its group is done, as NCCL asks: it must see NCCL's progress itself.
  mark("group_in_progress_polled");
  int in_progress_polls = 0;
  for (ncclResult_t state = ncclInProgress; state == ncclInProgress && in_progress_polls < 100;) {
    step("group_in_progress_poll", [&] { return ncclCommGetAsyncError(non_blocking, &state); });
    if (state == ncclInProgress) ++in_progress_polls;
  }
  g_steps["group_in_progress_polls_in_progress"] = in_progress_polls;

  // The program destroys the communicator of a held collective inside the group: NCCL's group end,
  // nothing run on the dead communicator.
  mark("group_destroyed");
  step("group_destroyed_start", [&] { return ncclGroupStart(); });
  step("group_destroyed_call", [&] { return ncclAllReduce(send, recv, 8, ncclBfloat16, ncclSum, destroyed, s1); });
  step("group_destroyed_destroy", [&] { return ncclCommDestroy(destroyed); });
  step("group_destroyed_end", [&] { return ncclGroupEnd(); });
  // Another thread aborts it (a watchdog); the group's call on a live communicator still runs.
  mark("group_aborted_elsewhere");
  step("group_aborted_start", [&] { return ncclGroupStart(); });
  step("group_aborted_call", [&] { return ncclAllGather(send, recv, 4, ncclFloat32, aborted, s1); });
  step("group_aborted_live", [&] { return ncclAllReduce(send, recv, 6, ncclFloat32, ncclSum, two, s1); });
  std::thread([&] { step("group_aborted_abort", [&] { return ncclCommAbort(aborted); }); }).join();
  step("group_aborted_end", [&] { return ncclGroupEnd(); });
  // Beside a rank on another device: what is left is one device's, and runs on the route.
  mark("group_destroyed_several_devices");
  step("group_destroyed_devices_start", [&] { return ncclGroupStart(); });
  step("group_destroyed_devices_call",
       [&] { return ncclAllReduce(send, recv, 8, ncclBfloat16, ncclSum, destroyed_beside_other_device, s1); });
  step("group_destroyed_devices_other",
       [&] { return ncclAllReduce(send, recv, 10, ncclBfloat16, ncclSum, other_device, s2); });
  step("group_destroyed_devices_destroy", [&] { return ncclCommDestroy(destroyed_beside_other_device); });
  step("group_destroyed_devices_end", [&] { return ncclGroupEnd(); });

  // Failures: the program gets NCCL's internal error; the communicator's later calls go to NCCL.
  mark("group_failing");
  step("group_failing_start", [&] { return ncclGroupStart(); });
  step("group_failing_call",
       [&] { return ncclAllReduce(send, recv, kFakeRouteFailingCount, ncclFloat32, ncclSum, non_blocking, s1); });
  step("group_failing_end", [&] { return ncclGroupEnd(); });
  mark("failing");
  step(
      "failing", [&] { return ncclAllReduce(send, recv, kFakeRouteFailingCount, ncclFloat32, ncclSum, three, s1); },
      1234);
  step("after_failure", [&] { return ncclAllReduce(send, recv, 9, ncclFloat32, ncclSum, three, s1); });

  mark("teardown");
  step("destroy_two", [&] { return ncclCommDestroy(two); });
  step("destroy_three", [&] { return ncclCommDestroy(three); });
  step("abort_non_blocking", [&] { return ncclCommAbort(non_blocking); });
  step("destroy_other_device", [&] { return ncclCommDestroy(other_device); });
  mark("teardown_first_use");
  for (int i = 0; i < 2; ++i)
    step("destroy_first_use" + std::to_string(i), [&] { return ncclCommDestroy(first_use[i]); });
  step("destroy_new_on_zero", [&] { return ncclCommDestroy(new_on_zero); });

  std::printf("%s\n", json({{"steps", g_steps}, {"calls", json::parse(fake_nccl_calls_json())}}).dump().c_str());
  return 0;
}
