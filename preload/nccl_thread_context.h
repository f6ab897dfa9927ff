#pragma once
// What this thread is inside, for every NCCL hook: tandem's own NCCL work (the re-entrancy flag: the
// route library's NCCL calls come back through the interposer's exported hooks, which must then
// forward them straight to NCCL, uncounted) and the program's NCCL group (ncclGroupStart /
// ncclGroupEnd, counted per thread, since NCCL's groups are). Never throws.
namespace tandem::preload {

// True while this thread runs tandem's own NCCL work.
bool inside_tandem();
class InsideTandem {
 public:
  InsideTandem();
  ~InsideTandem();
  InsideTandem(const InsideTandem&) = delete;
  InsideTandem& operator=(const InsideTandem&) = delete;
};

// The program's ncclGroupStart / ncclGroupEnd on this thread (called once NCCL accepted the start;
// every end closes a level, as NCCL's does whatever it returns). group_ended() is true when the
// outermost group ended.
void group_started();
bool group_ended();
bool inside_group();

}  // namespace tandem::preload
