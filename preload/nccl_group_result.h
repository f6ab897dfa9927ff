#pragma once
// What the program's outermost ncclGroupEnd returns when the interposer held some of the group's
// collectives (nccl_copy_engine.h): a decision about three results, pure (ncclResult_t values as
// ints, no NCCL header), so it is tested on CPU.
namespace tandem::preload {

// `nccl`: what NCCL's own ncclGroupEnd returned (ncclSuccess, ncclInProgress or an error);
// `routed`: the group's routed part, ncclSuccess when it ran (or there was none, or NCCL's failure
// dropped it), else the error the program gets for it (ncclInternalError: it failed partway);
// `forwarded`: ncclSuccess, or NCCL's first refusal of a held call handed back to it before its end
// (a group over several devices), which the program would have had at the call.
// NCCL's failure wins: the group failed and its routed calls were never run. Then the routed part's,
// then a refusal; else NCCL's own result (ncclInProgress for a non-blocking group stays so).
int group_end_result(int nccl, int routed, int forwarded);

}  // namespace tandem::preload
