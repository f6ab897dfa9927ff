// The copy-engine plans (tandem/copy_engine_plan.h), executed on CPU: every rank's plan runs on host
// arrays, its NCCL calls in lockstep with the other ranks', with NCCL's semantics for each step, and
// the result must be exactly the collective's (integer-valued data, so every order of summation is
// exact). Covers every kind, counts that do not split over the ranks, 1 to 8 ranks, every broadcast
// root, in place or not, buffers inside the route's windows or not, scaled reductions (the
// receiving rank's scalar on every term, as the sum kernel applies it); and checks that no step
// reads memory nothing wrote into a result, reads or writes outside a buffer, or writes where it
// reads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tandem/copy_engine_plan.h"
#include "tandem/error.h"

namespace tandem {
namespace {

// One rank's memory: named arrays; Send and Recv are views (array, offset) so that in-place calls
// share one array as NCCL's in-place rules say.
struct View {
  std::string array;
  uint64_t offset = 0;
};

struct RankMemory {
  std::map<std::string, std::vector<double>> arrays;
  std::map<PlanBuffer, View> views;

  double& at(PlanAt a, uint64_t i) {
    const View& v = views.at(a.buffer);
    std::vector<double>& array = arrays.at(v.array);
    const uint64_t index = v.offset + a.offset + i;
    if (index >= array.size())
      throw std::out_of_range(std::string(to_string(a.buffer)) + "[" + std::to_string(a.offset + i) + "]");
    return array[index];
  }
};

struct Case {
  Collective kind;
  uint64_t count;
  int nranks;
  bool in_place, send_in_window, recv_in_window, scaled;
  int root = 0;  // broadcast
};

std::string describe(const Case& c) {
  return std::string(to_string(c.kind)) + " count " + std::to_string(c.count) + " ranks " + std::to_string(c.nranks) +
         (c.in_place ? " in-place" : "") + (c.send_in_window ? " send-in-window" : "") +
         (c.recv_in_window ? " recv-in-window" : "") + (c.scaled ? " scaled" : "") +
         (c.kind == Collective::Broadcast ? " root " + std::to_string(c.root) : "");
}

double input_value(int rank, uint64_t i) { return double((rank + 1) * 1000 + int64_t(i % 997)); }
// The reduction's scalar, applied by the sum to every term (ranks hold the same one).
double scale_of(int) { return 3.0; }

// The arrays and views of one rank before the call: the send buffer holds the rank's data, the rest
// is NaN (never-written memory), so a result that reads it fails.
RankMemory memory_for(const Case& c, int rank, const CopyEnginePlan& plan) {
  RankMemory m;
  const uint64_t send = send_elements(c.kind, c.count, c.nranks), recv = recv_elements(c.kind, c.count, c.nranks);
  const double nan = std::nan("");
  m.arrays["pool-input"].assign(plan.input_elements, nan);
  m.arrays["pool-output"].assign(plan.output_elements, nan);
  m.arrays["pool-scratch"].assign(plan.scratch_elements, nan);
  m.views[PlanBuffer::PoolInput] = {"pool-input", 0};
  m.views[PlanBuffer::PoolOutput] = {"pool-output", 0};
  m.views[PlanBuffer::PoolScratch] = {"pool-scratch", 0};
  if (!c.in_place) {
    m.arrays["send"].resize(send);
    for (uint64_t i = 0; i < send; ++i) m.arrays["send"][i] = input_value(rank, i);
    m.arrays["recv"].assign(recv, nan);
    m.views[PlanBuffer::Send] = {"send", 0};
    m.views[PlanBuffer::Recv] = {"recv", 0};
  } else if (c.kind == Collective::AllGather) {
    // The input is this rank's chunk of the output.
    m.arrays["buffer"].assign(recv, nan);
    for (uint64_t i = 0; i < c.count; ++i) m.arrays["buffer"][uint64_t(rank) * c.count + i] = input_value(rank, i);
    m.views[PlanBuffer::Send] = {"buffer", uint64_t(rank) * c.count};
    m.views[PlanBuffer::Recv] = {"buffer", 0};
  } else if (c.kind == Collective::ReduceScatter) {
    // The output is this rank's chunk of the input.
    m.arrays["buffer"].resize(send);
    for (uint64_t i = 0; i < send; ++i) m.arrays["buffer"][i] = input_value(rank, i);
    m.views[PlanBuffer::Send] = {"buffer", 0};
    m.views[PlanBuffer::Recv] = {"buffer", uint64_t(rank) * c.count};
  } else {
    m.arrays["buffer"].resize(send);
    for (uint64_t i = 0; i < send; ++i) m.arrays["buffer"][i] = input_value(rank, i);
    m.views[PlanBuffer::Send] = {"buffer", 0};
    m.views[PlanBuffer::Recv] = {"buffer", 0};
  }
  return m;
}

// The collective's result on rank r, element i, from every rank's input.
double expected(const Case& c, int r, uint64_t i) {
  const auto in = [&](int rank, uint64_t index) { return input_value(rank, index) * (c.scaled ? scale_of(r) : 1); };
  double sum = 0;
  switch (c.kind) {
    case Collective::AllReduce:
      for (int j = 0; j < c.nranks; ++j) sum += in(j, i);
      return sum;
    case Collective::ReduceScatter:
      for (int j = 0; j < c.nranks; ++j) sum += in(j, uint64_t(r) * c.count + i);
      return sum;
    case Collective::AllGather:
      return in(int(i / c.count), i % c.count);
    case Collective::Broadcast:
      return in(c.root, i);
    case Collective::AllToAll:
      break;
  }
  return in(int(i / c.count), uint64_t(r) * c.count + i % c.count);
}

struct Write {
  int rank;
  PlanAt to;
  uint64_t index;
  double value;
};

// Rank r's part of one step: what it writes, read before any of it is written (the GPU's copies of
// one step run concurrently). A collective step reads the peers' buffers as they are at that step.
void step_writes(const Case& c, const std::vector<CopyEnginePlan>& plans, const std::vector<size_t>& at_step,
                 std::vector<RankMemory>& ranks, int r, std::vector<Write>& writes) {
  const PlanStep& st = plans[size_t(r)].steps[at_step[size_t(r)]];
  RankMemory& mem = ranks[size_t(r)];
  const auto peer_step = [&](int j) -> const PlanStep& { return plans[size_t(j)].steps[at_step[size_t(j)]]; };
  switch (st.op) {
    case PlanStep::Op::Stage:
      for (uint64_t i = 0; i < st.elements; ++i) writes.push_back({r, st.to, i, mem.at(st.from, i)});
      break;
    case PlanStep::Op::Exchange:
      // Root r receives chunk r of every rank j into its chunk j.
      for (int j = 0; j < c.nranks; ++j) {
        if (j == r && !st.own_chunk_copied) continue;
        const PlanStep& sender = peer_step(j);
        for (uint64_t i = 0; i < st.elements; ++i)
          writes.push_back(
              {r,
               {st.to.buffer, st.to.offset + uint64_t(j) * st.elements},
               i,
               ranks[size_t(j)].at({sender.from.buffer, sender.from.offset + uint64_t(r) * st.stride}, i)});
      }
      break;
    case PlanStep::Op::Sum:
      for (uint64_t i = 0; i < st.elements; ++i) {
        double total = 0;
        for (int j = 0; j < c.nranks; ++j)
          total += (j == st.own_index ? mem.at(st.own, i)
                                      : mem.at({st.from.buffer, st.from.offset + uint64_t(j) * st.elements}, i)) *
                   (c.scaled ? scale_of(r) : 1);
        writes.push_back({r, st.to, i, total});
      }
      break;
    case PlanStep::Op::AllGather:
      // Chunk j of every rank's buffer becomes rank j's chunk j.
      for (int j = 0; j < c.nranks; ++j) {
        if (j == r) continue;
        const PlanStep& sender = peer_step(j);
        for (uint64_t i = 0; i < st.elements; ++i)
          writes.push_back({r,
                            {st.to.buffer, st.to.offset + uint64_t(j) * st.elements},
                            i,
                            ranks[size_t(j)].at({sender.to.buffer, sender.to.offset + uint64_t(j) * st.elements}, i)});
      }
      break;
    case PlanStep::Op::Scatter: {
      // Chunk r of the root's input lands in chunk r of this rank's output: nothing moves where the
      // root's own chunk is already in place.
      const PlanStep& root = peer_step(st.root);
      const PlanAt from{root.from.buffer, root.from.offset + uint64_t(r) * st.elements};
      const PlanAt to{st.to.buffer, st.to.offset + uint64_t(r) * st.elements};
      const bool in_place = r == st.root && from.buffer == to.buffer && from.offset == to.offset;
      if (!in_place)
        for (uint64_t i = 0; i < st.elements; ++i) writes.push_back({r, to, i, ranks[size_t(st.root)].at(from, i)});
      break;
    }
  }
}

// Runs every rank's plan: each rank's own steps (stage, sum) as far as its next collective step,
// then that collective step on every rank at once, which must be the same call on every rank.
void execute(const Case& c, std::vector<CopyEnginePlan>& plans, std::vector<RankMemory>& ranks) {
  std::vector<size_t> at_step(size_t(c.nranks), 0);
  const auto done = [&](int r) { return at_step[size_t(r)] == plans[size_t(r)].steps.size(); };
  const auto apply = [&](const std::vector<Write>& writes) {
    for (const Write& w : writes) ranks[size_t(w.rank)].at(w.to, w.index) = w.value;
  };
  for (;;) {
    for (int r = 0; r < c.nranks; ++r)
      while (!done(r) && !is_collective_step(plans[size_t(r)].steps[at_step[size_t(r)]].op)) {
        std::vector<Write> writes;
        step_writes(c, plans, at_step, ranks, r, writes);
        apply(writes);
        ++at_step[size_t(r)];
      }
    int finished = 0;
    for (int r = 0; r < c.nranks; ++r) finished += done(r) ? 1 : 0;
    if (finished == c.nranks) return;
    ASSERT_EQ(finished, 0) << "every rank makes the same collective calls";
    const PlanStep& first = plans[0].steps[at_step[0]];
    for (int r = 0; r < c.nranks; ++r) {
      const PlanStep& st = plans[size_t(r)].steps[at_step[size_t(r)]];
      ASSERT_EQ(st.op, first.op) << "rank " << r << " step " << at_step[size_t(r)];
      ASSERT_EQ(st.elements, first.elements) << "rank " << r;
      ASSERT_EQ(st.stride, first.stride) << "rank " << r;
      ASSERT_EQ(st.root, first.root) << "rank " << r;
    }
    std::vector<Write> writes;
    for (int r = 0; r < c.nranks; ++r) step_writes(c, plans, at_step, ranks, r, writes);
    apply(writes);
    for (size_t& s : at_step) ++s;
  }
}

void check(const Case& c) {
  SCOPED_TRACE(describe(c));
  std::vector<CopyEnginePlan> plans;
  std::vector<RankMemory> ranks;
  for (int r = 0; r < c.nranks; ++r) {
    PlanRequest req;
    req.kind = c.kind;
    req.count = c.count;
    req.nranks = c.nranks;
    req.rank = r;
    req.element_bytes = 2;
    req.send_in_window = c.send_in_window;
    req.recv_in_window = c.recv_in_window;
    req.in_place = c.in_place;
    req.root = c.root;
    plans.push_back(plan_copy_engine_collective(req));
    ranks.push_back(memory_for(c, r, plans.back()));
  }
  ASSERT_NO_THROW(execute(c, plans, ranks));
  const uint64_t recv = recv_elements(c.kind, c.count, c.nranks);
  for (int r = 0; r < c.nranks; ++r)
    for (uint64_t i = 0; i < recv; ++i) {
      const double got = ranks[size_t(r)].at({PlanBuffer::Recv, 0}, i);
      ASSERT_EQ(got, expected(c, r, i)) << "rank " << r << " element " << i;
    }
  // The input is left as it was, except where it is the output.
  if (!c.in_place)
    for (int r = 0; r < c.nranks; ++r)
      for (uint64_t i = 0; i < send_elements(c.kind, c.count, c.nranks); ++i)
        ASSERT_EQ(ranks[size_t(r)].arrays["send"][i], input_value(r, i)) << "rank " << r << " send " << i;
}

TEST(CopyEnginePlan, BroadcastFromEveryRootGivesTheRootsData) {
  for (int nranks : {1, 2, 3, 4, 5, 8})
    for (int root = 0; root < nranks; ++root)
      for (uint64_t count : {1u, 2u, 3u, 7u, 8u, 13u, 16u, 97u, 256u})
        for (bool in_place : {false, true})
          for (bool send_in : {false, true})
            for (bool recv_in : {false, true}) {
              if (in_place && send_in != recv_in) continue;
              check({Collective::Broadcast, count, nranks, in_place, send_in, recv_in, false, root});
              if (HasFatalFailure()) return;
            }
}

TEST(CopyEnginePlan, OnlyTheBroadcastsRootStagesItsInput) {
  PlanRequest r;
  r.kind = Collective::Broadcast;
  r.count = 10;  // not a multiple of 4: padded chunks of 3
  r.nranks = 4;
  r.root = 2;
  r.element_bytes = 4;
  for (int rank = 0; rank < 4; ++rank) {
    r.rank = rank;
    const CopyEnginePlan p = plan_copy_engine_collective(r);
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_EQ(p.chunk, 3u);
    EXPECT_EQ(p.output_elements, 12u) << "the same pool on every rank";
    EXPECT_EQ(p.input_elements, 0u);
    ASSERT_EQ(p.steps.size(), rank == 2 ? 4u : 3u);
    EXPECT_EQ(p.steps.front().op, rank == 2 ? PlanStep::Op::Stage : PlanStep::Op::Scatter);
    EXPECT_EQ(p.steps[p.steps.size() - 3].root, 2);
  }
}

TEST(CopyEnginePlan, EveryKindCountRankCountAndPlacementGivesTheCollectivesResult) {
  for (Collective kind :
       {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather, Collective::AllToAll})
    for (int nranks : {1, 2, 3, 4, 5, 8})
      for (uint64_t count : {1u, 2u, 3u, 7u, 8u, 13u, 16u, 97u, 256u})
        for (bool in_place : {false, true})
          for (bool send_in : {false, true})
            for (bool recv_in : {false, true})
              for (bool scaled : {false, true}) {
                if (in_place && kind == Collective::AllToAll) continue;  // refused before any plan
                if (scaled && !reduces(kind)) continue;
                // In place, one buffer holds both sides: both lie in a window or neither does.
                if (in_place && send_in != recv_in) continue;
                check({kind, count, nranks, in_place, send_in, recv_in, scaled});
                if (HasFatalFailure()) return;
              }
}

PlanRequest request(Collective kind, uint64_t count, int nranks, size_t element_bytes = 2) {
  PlanRequest r;
  r.kind = kind;
  r.count = count;
  r.nranks = nranks;
  r.element_bytes = element_bytes;
  return r;
}

TEST(CopyEnginePlan, AStagedAllReducePadsItsChunksToSixteenBytes) {
  // 1000 bf16 over 3 ranks: 334 elements each, padded to 336 (16 bytes = 8 bf16).
  const CopyEnginePlan p = plan_copy_engine_collective(request(Collective::AllReduce, 1000, 3));
  EXPECT_EQ(p.chunk, 336u);
  EXPECT_EQ(p.input_elements, 1008u);
  EXPECT_EQ(p.scratch_elements, 1008u);
  // Window memory that splits evenly is not staged, and not padded.
  PlanRequest windowed = request(Collective::AllReduce, 1002, 3);
  windowed.send_in_window = windowed.recv_in_window = true;
  const CopyEnginePlan w = plan_copy_engine_collective(windowed);
  EXPECT_EQ(w.chunk, 334u);
  EXPECT_EQ(w.input_elements, 0u);
  ASSERT_EQ(w.steps.size(), 3u);
  EXPECT_EQ(w.steps[0].op, PlanStep::Op::Exchange);
  EXPECT_EQ(w.steps[1].op, PlanStep::Op::Sum);
  EXPECT_EQ(w.steps[2].op, PlanStep::Op::AllGather);
}

TEST(CopyEnginePlan, ReductionsInWindowMemoryAreNotStaged) {
  for (Collective kind : {Collective::AllReduce, Collective::ReduceScatter}) {
    PlanRequest r = request(kind, 64, 4);
    r.send_in_window = r.recv_in_window = true;
    const CopyEnginePlan p = plan_copy_engine_collective(r);
    for (const PlanStep& s : p.steps) EXPECT_NE(s.op, PlanStep::Op::Stage) << to_string(kind);
    EXPECT_EQ(p.input_elements + p.output_elements, 0u) << to_string(kind);
  }
}

TEST(CopyEnginePlan, InPlaceAllGatherInWindowMemoryIsNcclsAllGatherAlone) {
  PlanRequest r = request(Collective::AllGather, 32, 4);
  r.in_place = r.send_in_window = r.recv_in_window = true;
  const CopyEnginePlan p = plan_copy_engine_collective(r);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].op, PlanStep::Op::AllGather);
  EXPECT_EQ(pool_layout(p, 2).bytes, 0u);
}

TEST(CopyEnginePlan, PoolPartsStartOnFourKibibyteBoundaries) {
  const CopyEnginePlan p = plan_copy_engine_collective(request(Collective::ReduceScatter, 100, 3));
  const PoolLayout l = pool_layout(p, 2);
  EXPECT_EQ(l.input, 0u);
  EXPECT_EQ(l.output, 4096u);
  EXPECT_EQ(l.scratch, 8192u);
  EXPECT_EQ(l.bytes, 12288u);
}

TEST(CopyEnginePlan, BadRequestsAreRefused) {
  EXPECT_THROW(plan_copy_engine_collective(request(Collective::AllReduce, 0, 2)), Error);
  PlanRequest r = request(Collective::AllGather, 8, 2);
  r.rank = 2;
  EXPECT_THROW(plan_copy_engine_collective(r), Error);
  PlanRequest a2a = request(Collective::AllToAll, 8, 2);
  a2a.in_place = true;
  EXPECT_THROW(plan_copy_engine_collective(a2a), Error);
  PlanRequest broadcast = request(Collective::Broadcast, 8, 2);
  broadcast.root = 2;
  EXPECT_THROW(plan_copy_engine_collective(broadcast), Error);
  broadcast.root = -1;
  EXPECT_THROW(plan_copy_engine_collective(broadcast), Error);
}

// A call cut into pieces under a pool cap (pieces_within): each piece planned and run on every rank
// over its part of the buffers, with a pool of its own size; the whole result must be the call's.
void check_in_pieces(const Case& c, size_t cap, uint64_t granularity) {
  SCOPED_TRACE(describe(c) + " cap " + std::to_string(cap));
  PlanRequest whole;
  whole.kind = c.kind;
  whole.count = c.count;
  whole.nranks = c.nranks;
  whole.element_bytes = 2;
  whole.in_place = c.in_place;
  whole.root = c.root;
  const std::vector<CallPiece> pieces = pieces_within(whole, cap, granularity);
  ASSERT_GT(pieces.size(), 1u) << "the case must be cut for this test to mean anything";
  uint64_t next = 0;
  for (const CallPiece& piece : pieces) {
    EXPECT_EQ(piece.offset, next);
    EXPECT_GT(piece.count, 0u);
    next += piece.count;
  }
  EXPECT_EQ(next, c.count) << "the pieces cover the call exactly";
  // The buffers as the whole call has them; each piece's pool replaced by one of its own size.
  std::vector<RankMemory> ranks;
  for (int r = 0; r < c.nranks; ++r) {
    whole.rank = r;
    ranks.push_back(memory_for(c, r, plan_copy_engine_collective(whole)));
  }
  std::vector<std::map<PlanBuffer, View>> whole_views;
  for (const RankMemory& m : ranks) whole_views.push_back(m.views);
  for (const CallPiece& piece : pieces) {
    Case part = c;
    part.count = piece.count;
    std::vector<CopyEnginePlan> plans;
    for (int r = 0; r < c.nranks; ++r) {
      PlanRequest req = whole;
      req.count = piece.count;
      req.rank = r;
      plans.push_back(plan_copy_engine_collective(req));
      EXPECT_LE(pool_layout(plans.back(), 2).bytes, cap) << "piece at " << piece.offset;
      RankMemory& m = ranks[size_t(r)];
      const double nan = std::nan("");
      m.arrays["pool-input"].assign(plans.back().input_elements, nan);
      m.arrays["pool-output"].assign(plans.back().output_elements, nan);
      m.arrays["pool-scratch"].assign(plans.back().scratch_elements, nan);
      for (PlanBuffer b : {PlanBuffer::Send, PlanBuffer::Recv}) {
        View v = m.views.at(b);
        v.offset += piece.offset;
        m.views[b] = v;
      }
    }
    ASSERT_NO_THROW(execute(part, plans, ranks));
    for (size_t r = 0; r < ranks.size(); ++r) ranks[r].views = whole_views[r];
  }
  for (int r = 0; r < c.nranks; ++r)
    for (uint64_t i = 0; i < c.count; ++i)
      ASSERT_EQ(ranks[size_t(r)].at({PlanBuffer::Recv, 0}, i), expected(c, r, i)) << "rank " << r << " element " << i;
}

TEST(CopyEnginePlan, AllReducesAndBroadcastsLargerThanThePoolCapRunInPiecesWithTheWholeResult) {
  // Small granules and a small cap, so that short host arrays make several pieces: pool parts start on
  // 4 KiB boundaries, so an all-reduce's pool is at least 8 KiB (input and scratch, 2048 bf16 each).
  for (int nranks : {2, 3, 4})
    for (uint64_t count : {4096u, 5001u, 9000u})
      for (bool in_place : {false, true})
        for (bool scaled : {false, true}) {
          check_in_pieces({Collective::AllReduce, count, nranks, in_place, false, false, scaled}, 8192, 64);
          if (HasFatalFailure()) return;
        }
  for (int nranks : {2, 3})
    for (int root = 0; root < nranks; ++root)
      for (bool in_place : {false, true}) {
        check_in_pieces({Collective::Broadcast, 3000, nranks, in_place, false, false, false, root}, 4096, 64);
        if (HasFatalFailure()) return;
      }
}

TEST(CopyEnginePlan, PiecesStayWithinTheCapAndOtherKindsRunWhole) {
  PlanRequest r = request(Collective::AllReduce, uint64_t{1} << 30, 8, 4);  // 4 GiB of fp32
  const std::vector<CallPiece> pieces = pieces_within(r, size_t{256} << 20);
  ASSERT_GT(pieces.size(), 8u);
  for (const CallPiece& p : pieces) {
    PlanRequest piece = r;
    piece.count = p.count;
    EXPECT_LE(plan_pool_bytes(piece), size_t{256} << 20);
    EXPECT_EQ(p.offset % 4096, 0u);  // 16-byte aligned parts for the sum kernel's vector loads
  }
  // The largest pieces that fit: one granule more would not.
  PlanRequest bigger = r;
  bigger.count = pieces.front().count + 4096;
  EXPECT_GT(plan_pool_bytes(bigger), size_t{256} << 20);
  // Where the pool's 4 KiB parts make small pieces dearer than the proportional share says (20000 bf16
  // need 80 KiB; 12 KiB is 15 % of that, 2944 elements, whose parts round up to 16 KiB), the pieces
  // step down to what fits: 2048 elements, 4 KiB each part.
  PlanRequest small = request(Collective::AllReduce, 20000, 2);
  const std::vector<CallPiece> stepped = pieces_within(small, 12288, 64);
  ASSERT_EQ(stepped.front().count, 2048u);
  for (const CallPiece& p : stepped) {
    PlanRequest piece = small;
    piece.count = p.count;
    EXPECT_LE(plan_pool_bytes(piece), 12288u) << "piece at " << p.offset;
  }
  // A call that fits, no cap, and the kinds not cut yet: one piece, the whole call.
  for (const auto& [kind, cap] : std::vector<std::pair<Collective, size_t>>{{Collective::AllReduce, size_t{1} << 40},
                                                                            {Collective::AllReduce, 0},
                                                                            {Collective::ReduceScatter, 4096},
                                                                            {Collective::AllGather, 4096},
                                                                            {Collective::AllToAll, 4096}}) {
    PlanRequest q = request(kind, 1 << 20, 4);
    const std::vector<CallPiece> one = pieces_within(q, cap);
    ASSERT_EQ(one.size(), 1u) << to_string(kind) << " cap " << cap;
    EXPECT_EQ(one[0].offset, 0u);
    EXPECT_EQ(one[0].count, uint64_t{1} << 20);
  }
  // A cap too small for one granule: granules, each exceeding the cap by what it needs.
  const std::vector<CallPiece> granules = pieces_within(request(Collective::AllReduce, 10000, 2), 1, 4096);
  ASSERT_EQ(granules.size(), 3u);
  EXPECT_EQ(granules[2].count, 10000u - 8192u);
}

TEST(CopyEnginePlan, WindowContainmentIsWhole) {
  const std::vector<AddressRange> windows = {{0x1000, 0x100}, {0x4000, 0x1000}};
  EXPECT_TRUE(lies_within(windows, 0x1000, 0x100));
  EXPECT_TRUE(lies_within(windows, 0x1080, 0x80));
  EXPECT_FALSE(lies_within(windows, 0x1080, 0x81));  // one byte past the end
  EXPECT_FALSE(lies_within(windows, 0x0fff, 0x10));  // starts before
  EXPECT_TRUE(lies_within(windows, 0x4fff, 1));
  EXPECT_FALSE(lies_within(windows, 0x2000, 1));
  EXPECT_FALSE(lies_within(windows, UINTPTR_MAX, 2));  // no wrap
  EXPECT_FALSE(lies_within({}, 0x1000, 1));
}

}  // namespace
}  // namespace tandem
