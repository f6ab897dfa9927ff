// How a scenario's program is ordered across the compute and communication streams, without a GPU:
// dependencies derived from declared memory accesses, and the host enqueue order of both launch
// orders (every wait must name an operation enqueued before it).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/program.h"
#include "tandem/error.h"

namespace {

using namespace tandem::bench;
using tandem::Collective;
using tandem::DType;

// Addresses that are never dereferenced: the program only compares ranges.
char arena[1 << 12];
void* buf(int i) { return arena + 256 * i; }

Op compute(const std::string& name, std::vector<int> reads, std::vector<int> writes) {
  Op op;
  op.kind = Op::Kind::Compute;
  op.name = name;
  for (int r : reads) op.access.push_back({buf(r), 256, false});
  for (int w : writes) op.access.push_back({buf(w), 256, true});
  op.enqueue = [](cudaStream_t) {};
  return op;
}

Op collective(const std::string& name, Collective kind, int send, int recv, int64_t count = 64) {
  Op op;
  op.kind = Op::Kind::Collective;
  op.name = name;
  op.call.kind = kind;
  op.call.send = buf(send);
  op.call.recv = buf(recv);
  op.call.count = count;
  op.call.dtype = DType::BF16;
  return op;
}

std::vector<std::string> names(const Program& p, const std::vector<IssueStep>& order) {
  std::vector<std::string> out;
  for (const auto& s : order) out.push_back(p.ops()[s.op].name);
  return out;
}

// Every wait names an operation of the other stream enqueued earlier.
void expect_waits_follow_their_events(const Program& p, const std::vector<IssueStep>& order) {
  std::vector<bool> issued(p.ops().size(), false);
  for (const auto& s : order) {
    if (s.wait >= 0) {
      EXPECT_TRUE(issued[s.wait]) << p.ops()[s.op].name << " waits for " << p.ops()[s.wait].name
                                  << " before it is enqueued";
      EXPECT_NE(p.ops()[s.wait].kind, p.ops()[s.op].kind);
      EXPECT_TRUE(p.needs_event(s.wait));
    }
    EXPECT_EQ(s.on_comm, p.ops()[s.op].kind == Op::Kind::Collective);
    issued[s.op] = true;
  }
  for (bool i : issued) EXPECT_TRUE(i);
}

// wgrad0 -> all-reduce(grad0); dgrad (independent); wgrad1 -> all-reduce(grad1); next dgrad.
// Not finalized.
Program two_bucket_backward() {
  Program p(2);
  p.add(compute("wgrad0", {0}, {1}));
  p.add(collective("ar0", Collective::AllReduce, 1, 1, 128));
  p.add(compute("dgrad0", {0}, {2}));
  p.add(compute("wgrad1", {2}, {3}));
  p.add(collective("ar1", Collective::AllReduce, 3, 3, 128));
  p.add(compute("dgrad1", {2}, {4}));
  return p;
}

Program two_bucket_backward_finalized() {
  Program p = two_bucket_backward();
  p.finalize();
  return p;
}

TEST(ScenarioProgram, BucketReductionsOverlapTheRestOfBackward) {
  Program p = two_bucket_backward();
  p.finalize();
  EXPECT_EQ(p.cross_wait(1), 0);
  EXPECT_EQ(p.cross_wait(2), -1);
  EXPECT_EQ(p.cross_wait(4), 3);
  EXPECT_EQ(p.cross_wait(5), -1);
  EXPECT_TRUE(p.needs_event(0));
  EXPECT_FALSE(p.needs_event(2));

  const auto first = full_issue_order(p, /*comm_first=*/true);
  EXPECT_EQ(names(p, first), (std::vector<std::string>{"wgrad0", "ar0", "dgrad0", "wgrad1", "ar1", "dgrad1"}));
  expect_waits_follow_their_events(p, first);
  // Compute first: each collective is enqueued after the next compute operation.
  const auto later = full_issue_order(p, /*comm_first=*/false);
  EXPECT_EQ(names(p, later), (std::vector<std::string>{"wgrad0", "dgrad0", "ar0", "wgrad1", "dgrad1", "ar1"}));
  expect_waits_follow_their_events(p, later);

  EXPECT_EQ(p.collective_bytes(), 2u * 128 * 2);
  EXPECT_EQ(p.collective_kinds(), "all-reduce");
}

TEST(ScenarioProgram, ADependentComputeIsNeverEnqueuedBeforeItsCollective) {
  // Tensor parallel: partial -> all-reduce(partial) -> residual reads it.
  Program p(2);
  p.add(compute("row gemm", {0}, {1}));
  p.add(collective("ar", Collective::AllReduce, 1, 1));
  p.add(compute("residual", {1, 0}, {2}));
  p.finalize();
  EXPECT_EQ(p.cross_wait(2), 1);
  const auto later = full_issue_order(p, false);
  EXPECT_EQ(names(p, later), (std::vector<std::string>{"row gemm", "ar", "residual"}));
  EXPECT_EQ(later[2].wait, 1);
  expect_waits_follow_their_events(p, later);
}

TEST(ScenarioProgram, WriteAfterReadAndWriteAfterWriteAreOrdered) {
  Program p(4);
  p.add(compute("fill send", {}, {0}));
  p.add(collective("all-gather", Collective::AllGather, 0, 4, 16));  // reads buf 0, writes buf 4..
  p.add(compute("overwrite send", {}, {0}));                         // WAR on the all-gather
  p.add(compute("overwrite recv", {}, {4}));                         // WAW on the all-gather
  p.add(compute("unrelated", {}, {9}));
  p.finalize();
  EXPECT_EQ(p.cross_wait(1), 0);
  EXPECT_EQ(p.cross_wait(2), 1);
  EXPECT_EQ(p.cross_wait(3), 1);
  EXPECT_EQ(p.cross_wait(4), -1);
  for (bool comm_first : {true, false}) expect_waits_follow_their_events(p, full_issue_order(p, comm_first));
  EXPECT_EQ(p.collective_bytes(), 16u * 4 * 2);  // all-gather: the output
}

TEST(ScenarioProgram, OnlyTheLatestConflictOfTheOtherStreamIsWaitedFor) {
  Program p(2);
  p.add(collective("ag0", Collective::AllGather, 0, 2, 32));
  p.add(collective("ag1", Collective::AllGather, 1, 6, 32));
  p.add(compute("reads both", {2, 6}, {10}));
  p.add(compute("reads first", {2}, {11}));
  p.add(collective("rs", Collective::ReduceScatter, 10, 12, 32));
  p.add(compute("same stream dep", {10}, {13}));
  p.finalize();
  EXPECT_EQ(p.cross_wait(2), 1);
  EXPECT_EQ(p.cross_wait(3), 0);
  EXPECT_EQ(p.cross_wait(4), 2);  // reads buf 10, written by op 2 (op 3's buf 11 lies outside its range)
  EXPECT_EQ(p.cross_wait(5), -1);
  EXPECT_EQ(p.collective_kinds(), "all-gather+reduce-scatter");
  for (bool comm_first : {true, false}) expect_waits_follow_their_events(p, full_issue_order(p, comm_first));
}

TEST(ScenarioProgram, InterleavedMicroBatchesOverlapEachOthersCollectives) {
  // Two micro-batches, block by block: gemm(m0) ar(m0) gemm(m1) ar(m1) add(m0) add(m1).
  Program p(2);
  p.add(compute("gemm m0", {0}, {1}));
  p.add(collective("ar m0", Collective::AllReduce, 1, 1));
  p.add(compute("gemm m1", {0}, {2}));
  p.add(collective("ar m1", Collective::AllReduce, 2, 2));
  p.add(compute("add m0", {1}, {3}));
  p.add(compute("add m1", {2}, {4}));
  p.finalize();
  const auto later = full_issue_order(p, false);
  // ar m0 is enqueued after gemm m1, which it overlaps; add m0 waits for it.
  EXPECT_EQ(names(p, later), (std::vector<std::string>{"gemm m0", "gemm m1", "ar m0", "add m0", "ar m1", "add m1"}));
  EXPECT_EQ(later[3].wait, 1);
  EXPECT_EQ(later[5].wait, 3);
  expect_waits_follow_their_events(p, later);
  const auto first = full_issue_order(p, true);
  EXPECT_EQ(names(p, first), (std::vector<std::string>{"gemm m0", "ar m0", "gemm m1", "ar m1", "add m0", "add m1"}));
  expect_waits_follow_their_events(p, first);
}

// A microbenchmark: `count` compute units and a collective on buffers of its own. Neither waits for
// the other, so the launch order alone places the collective: after every unit (compute first), or
// before them (comm first), as the policy says.
TEST(ScenarioProgram, AnIndependentCollectiveGoesFirstOrLastByLaunchOrder) {
  Program p(2);
  for (const char* unit : {"gemm 1", "gemm 2", "gemm 3"}) p.add(compute(unit, {0}, {1}));
  p.add(collective("all-reduce", Collective::AllReduce, 2, 3));
  p.finalize();
  EXPECT_FALSE(p.has_cross_waits());
  const auto compute_first = full_issue_order(p, false);
  EXPECT_EQ(names(p, compute_first), (std::vector<std::string>{"gemm 1", "gemm 2", "gemm 3", "all-reduce"}));
  expect_waits_follow_their_events(p, compute_first);
  const auto comm_first = full_issue_order(p, true);
  EXPECT_EQ(names(p, comm_first), (std::vector<std::string>{"all-reduce", "gemm 1", "gemm 2", "gemm 3"}));
  expect_waits_follow_their_events(p, comm_first);
  // Independent sides: the chain is the slower one.
  EXPECT_DOUBLE_EQ(p.chain_ms({1, 1, 1, 2.5}), 3.0);
  EXPECT_TRUE(two_bucket_backward_finalized().has_cross_waits());
}

TEST(ScenarioProgram, CollectiveSizesFollowNcclTests) {
  CollectiveCall c;
  c.dtype = DType::BF16;
  c.count = 100;
  c.kind = Collective::AllReduce;
  EXPECT_EQ(c.bytes(4), 200u);
  c.kind = Collective::AllGather;  // count = send elements
  EXPECT_EQ(c.send_elements(4), 100);
  EXPECT_EQ(c.recv_elements(4), 400);
  EXPECT_EQ(c.bytes(4), 800u);
  c.kind = Collective::ReduceScatter;  // count = receive elements
  EXPECT_EQ(c.send_elements(4), 400);
  EXPECT_EQ(c.recv_elements(4), 100);
  EXPECT_EQ(c.bytes(4), 800u);
  c.kind = Collective::AllToAll;  // count = elements per peer
  EXPECT_EQ(c.send_elements(4), 400);
  EXPECT_EQ(c.bytes(4), 800u);
}

TEST(ScenarioProgram, ChainBoundAddsWhatNoOverlapCanHide) {
  // Compute: wgrad0 0-2, dgrad0 2-3, wgrad1 3-5, dgrad1 5-6. Collectives: ar0 waits for wgrad0 and
  // runs 2-5; ar1 waits for wgrad1 (done at 5) and runs 5-8. The last reduction has nothing left
  // to hide behind: the chain is 8 ms, not max(6, 6).
  Program p = two_bucket_backward();
  EXPECT_THROW(p.chain_ms({2, 3, 1, 2, 3, 1}), tandem::Error);  // dependencies not derived yet
  p.finalize();
  EXPECT_DOUBLE_EQ(p.chain_ms({2, 3, 1, 2, 3, 1}), 8.0);
  // Short collectives hide entirely: the chain is the compute stream's sum.
  EXPECT_DOUBLE_EQ(p.chain_ms({2, 0.5, 1, 2, 0.5, 1}), 6.0);
  // A compute operation that reads a collective's output waits for it.
  Program q(2);
  q.add(collective("ag", Collective::AllGather, 0, 1, 64));
  q.add(compute("layer", {1}, {2}));
  q.finalize();
  EXPECT_DOUBLE_EQ(q.chain_ms({1.5, 4}), 5.5);
  EXPECT_THROW(q.chain_ms({1.5}), tandem::Error);
  EXPECT_THROW(q.chain_ms({1.5, -1}), tandem::Error);
}

}  // namespace
