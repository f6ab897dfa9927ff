// Which allocations a scenario registers as NCCL symmetric windows for copy-engine collectives,
// without a GPU: collective ranges from a program, their containing allocations (each once, in
// first-use order, whatever offset the range has inside it), and the refusal for programs with
// neither all-gather nor all-to-all.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collective_op.h"
#include "collectives/window_memory.h"
#include "harness/program.h"
#include "tandem/error.h"

namespace {

using namespace tandem::bench;
using tandem::Collective;

// Addresses that are never dereferenced: only ranges are compared. Four "allocations" of 1 KiB.
char arena[4 << 10];
char* alloc(int i) { return arena + 1024 * i; }
std::vector<ByteRange> allocations() {
  return {{alloc(0), 1024}, {alloc(1), 1024}, {alloc(2), 1024}, {alloc(3), 1024}};
}

Op collective(Collective kind, const void* send, void* recv, int64_t count) {
  return tandem_test::collective_op(kind, send, recv, count);
}

Op compute() {
  Op op;
  op.kind = Op::Kind::Compute;
  op.name = "k";
  op.access.push_back({alloc(3), 64, true});
  op.enqueue = [](cudaStream_t) {};
  return op;
}

TEST(ScenarioWindows, RangesAreSendThenReceiveWithNcclSizes) {
  Program p(2);
  p.add(compute());
  p.add(collective(Collective::AllGather, alloc(0), alloc(1), 64));      // send 64, recv 128
  p.add(collective(Collective::ReduceScatter, alloc(1), alloc(2), 32));  // send 64, recv 32
  p.add(collective(Collective::AllToAll, alloc(2), alloc(3), 16));       // 32 and 32
  p.finalize();
  const auto r = collective_ranges(p.collectives());
  ASSERT_EQ(r.size(), 6u);
  const std::vector<const void*> ptrs = {alloc(0), alloc(1), alloc(1), alloc(2), alloc(2), alloc(3)};
  const std::vector<int64_t> bytes = {128, 256, 128, 64, 64, 64};
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].ptr, ptrs[i]) << i;
    EXPECT_EQ(r[i].bytes, bytes[i]) << i;
  }
}

TEST(ScenarioWindows, TheWindowsSeeTheProgramsCollectivesInOrderAndByName) {
  Program p(4);
  p.add(compute());
  p.add(tandem_test::collective_op(Collective::AllGather, alloc(0), alloc(1), 64, "gather layer 0"));
  p.add(compute());
  p.add(tandem_test::collective_op(Collective::ReduceScatter, alloc(1), alloc(2), 32, "scatter layer 0"));
  p.finalize();
  const CaseCollectives c = p.collectives();
  EXPECT_EQ(c.nranks, 4);
  ASSERT_EQ(c.calls.size(), 2u);
  EXPECT_EQ(c.calls[0].name, "gather layer 0");
  EXPECT_EQ(c.calls[0].call.kind, Collective::AllGather);
  EXPECT_EQ(c.calls[1].name, "scatter layer 0");
  EXPECT_EQ(c.calls[1].call.recv, static_cast<void*>(alloc(2)));
}

TEST(ScenarioWindows, AllocationsInFirstUseOrderEachOnce) {
  // First use: allocation 2, then 0 (twice, at two offsets), then 2 again, then 3.
  const std::vector<ByteRange> ranges = {
      {alloc(2) + 512, 256}, {alloc(0), 128}, {alloc(0) + 896, 128}, {alloc(2), 1024}, {alloc(3) + 8, 8}};
  EXPECT_EQ(containing_allocations(allocations(), ranges), (std::vector<size_t>{2, 0, 3}));
}

TEST(ScenarioWindows, BucketsOfOneFlatBufferShareOneWindow) {
  // dp-backward: in-place all-reduces of consecutive buckets of one flat gradient buffer.
  Program p(4);
  p.add(collective(Collective::AllReduce, alloc(1), alloc(1), 128));
  p.add(collective(Collective::AllReduce, alloc(1) + 256, alloc(1) + 256, 384));
  p.finalize();
  EXPECT_EQ(containing_allocations(allocations(), collective_ranges(p.collectives())), (std::vector<size_t>{1}));
}

TEST(ScenarioWindows, RangeOutsideOrPastAnAllocationIsAnError) {
  std::vector<ByteRange> allocs = {{alloc(0), 1024}, {alloc(2), 1024}};  // alloc(1) is a gap
  EXPECT_THROW(containing_allocations(allocs, {{alloc(1) + 4, 8}}), tandem::Error);
  // Starts in allocation 0 and runs into the gap: no single window covers it.
  EXPECT_THROW(containing_allocations(allocs, {{alloc(0) + 1000, 100}}), tandem::Error);
  EXPECT_NO_THROW(containing_allocations(allocs, {{alloc(0) + 1000, 24}}));
}

TEST(ScenarioWindows, CopyEnginesTakeEveryCollectiveThatSplitsEvenly) {
  Program reduce_only(2);
  reduce_only.add(collective(Collective::AllReduce, alloc(0), alloc(0), 64));
  reduce_only.finalize();
  EXPECT_EQ(copy_engine_refusal(reduce_only.collectives()), "");
  EXPECT_EQ(copy_engine_scratch_bytes(reduce_only.collectives()), 64 * 2);  // bf16

  Program odd(2);  // 63 elements cannot be split in two chunks
  odd.add(collective(Collective::AllReduce, alloc(0), alloc(0), 63));
  odd.finalize();
  const std::string why = copy_engine_refusal(odd.collectives());
  EXPECT_NE(why.find("equal chunks"), std::string::npos) << why;
  EXPECT_EQ(why.rfind("c: ", 0), 0u) << "the refusal names the operation: " << why;

  Program none(2);
  none.add(compute());
  none.finalize();
  EXPECT_NE(copy_engine_refusal(none.collectives()).find("no collective"), std::string::npos);

  Program sp(2);  // tp-* with --sequence-parallel, fsdp
  sp.add(collective(Collective::AllGather, alloc(0), alloc(1), 64));
  sp.add(collective(Collective::ReduceScatter, alloc(1), alloc(2), 64));
  sp.finalize();
  EXPECT_EQ(copy_engine_refusal(sp.collectives()), "");
  // The reduce-scatter's send buffer: 64 elements per rank x 2 ranks, bf16.
  EXPECT_EQ(copy_engine_scratch_bytes(sp.collectives()), 64 * 2 * 2);

  Program moe(2);
  moe.add(collective(Collective::AllToAll, alloc(0), alloc(1), 64));
  moe.finalize();
  EXPECT_EQ(copy_engine_refusal(moe.collectives()), "");
  EXPECT_EQ(copy_engine_scratch_bytes(moe.collectives()), 0);
}

}  // namespace
