// The copy-engine plans (tandem/copy_engine_plan.h), executed on CPU: every rank's plan runs on host
// arrays, its NCCL calls in lockstep with the other ranks', with NCCL's semantics for each step, and
// the result must be exactly the collective's (integer-valued data, so every order of summation is
// exact). Covers every kind, counts that do not split over the ranks, 1 to 8 ranks, every broadcast
// root, in place or not, buffers inside the route's windows or not, scaled reductions (the
// receiving rank's scalar on every term, as the sum kernel applies it), calls cut into pieces under a
// pool cap (strided segments); and checks that no step reads memory nothing wrote into a result,
// reads or writes outside a buffer, or writes where it reads. The sum weighs the term of chunk j by
// j + 1 and the expected results weigh rank j's alike: a plan that sums the ranks' terms in another
// order than theirs (which on the GPU rounds differently from the whole call) fails.
#include <gtest/gtest.h>

#include <algorithm>
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
  int root = 0;              // broadcast
  size_t element_bytes = 2;  // the pool's layout, and so where a call is cut
  bool peer_copies = false;  // the route reaches the peers' pools by address (Push, Pull)
};

std::string describe(const Case& c) {
  return std::string(to_string(c.kind)) + " count " + std::to_string(c.count) + " ranks " + std::to_string(c.nranks) +
         (c.in_place ? " in-place" : "") + (c.send_in_window ? " send-in-window" : "") +
         (c.recv_in_window ? " recv-in-window" : "") + (c.scaled ? " scaled" : "") +
         (c.kind == Collective::Broadcast ? " root " + std::to_string(c.root) : "") + " " +
         std::to_string(c.element_bytes) + "-byte" + (c.peer_copies ? " peer-copies" : "");
}

double input_value(int rank, uint64_t i) { return double((rank + 1) * 1000 + int64_t(i % 997)); }
// The reduction's scalar, applied by the sum to every term (ranks hold the same one).
double scale_of(int) { return 3.0; }
// The simulated sum's weight of chunk j (rank j's term): see the top of the file.
double order_weight(int j) { return double(j + 1); }

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
      for (int j = 0; j < c.nranks; ++j) sum += in(j, i) * order_weight(j);
      return sum;
    case Collective::ReduceScatter:
      for (int j = 0; j < c.nranks; ++j) sum += in(j, uint64_t(r) * c.count + i) * order_weight(j);
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
    case PlanStep::Op::Copy:
      EXPECT_GE(st.rows, 1u);
      if (st.rows > 1) {
        // cudaMemcpy2DAsync's rule: no row wider than either pitch.
        EXPECT_GE(st.from_pitch, st.elements);
        EXPECT_GE(st.to_pitch, st.elements);
      }
      for (uint64_t k = 0; k < st.rows; ++k)
        for (uint64_t i = 0; i < st.elements; ++i)
          writes.push_back({r,
                            {st.to.buffer, st.to.offset + k * st.to_pitch},
                            i,
                            mem.at({st.from.buffer, st.from.offset + k * st.from_pitch}, i)});
      break;
    case PlanStep::Op::Exchange:
      // Root r receives chunk r of every rank j into its chunk j; each sender reads its chunk r with
      // its own stride (where its input lies, staged or not, is its own affair).
      for (int j = 0; j < c.nranks; ++j) {
        if (j == r && !st.own_chunk_copied) continue;
        const PlanStep& sender = peer_step(j);
        for (uint64_t i = 0; i < st.elements; ++i)
          writes.push_back(
              {r,
               {st.to.buffer, st.to.offset + uint64_t(j) * st.elements},
               i,
               ranks[size_t(j)].at({sender.from.buffer, sender.from.offset + uint64_t(r) * sender.stride}, i)});
      }
      break;
    case PlanStep::Op::Sum:
      for (uint64_t i = 0; i < st.elements; ++i) {
        double total = 0;
        for (int j = 0; j < c.nranks; ++j)
          total += (j == st.own_index ? mem.at(st.own, i)
                                      : mem.at({st.from.buffer, st.from.offset + uint64_t(j) * st.stride}, i)) *
                   (c.scaled ? scale_of(r) : 1) * order_weight(j);
        writes.push_back({r, st.to, i, total});
        if (st.writes_also) writes.push_back({r, st.also, i, total});
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
    case PlanStep::Op::Push:
    case PlanStep::Op::Pull:
      // This rank's copies as the GPU makes them (peer_copies): a Push writes into the peer's pool
      // from this rank's memory, a Pull into this rank's memory from the peer's pool, which the
      // peer's own step names alike.
      for (const PeerCopy& copy : peer_copies(st, r, c.nranks)) {
        const PlanStep& other = peer_step(copy.peer);
        EXPECT_EQ(other.op, st.op);
        const bool push = st.op == PlanStep::Op::Push;
        // The peer's pool part is where this rank's is (the pools are laid out alike).
        EXPECT_EQ(push ? other.to.buffer : other.from.buffer, push ? st.to.buffer : st.from.buffer);
        EXPECT_EQ(push ? other.to.offset : other.from.offset, push ? st.to.offset : st.from.offset);
        RankMemory& source = push ? mem : ranks[size_t(copy.peer)];
        for (uint64_t i = 0; i < copy.elements; ++i)
          writes.push_back({push ? copy.peer : r, copy.to, i, source.at(copy.from, i)});
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

// Whether the step is an NCCL call every rank makes alike (Exchange, AllGather, Scatter; Push and
// Pull, between barriers), rather than work of the rank's own (Stage, Copy, Sum), of which ranks may
// make different numbers.
bool is_collective_step(PlanStep::Op op) {
  return op == PlanStep::Op::Exchange || op == PlanStep::Op::AllGather || op == PlanStep::Op::Scatter ||
         op == PlanStep::Op::Push || op == PlanStep::Op::Pull;
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
    req.element_bytes = c.element_bytes;
    req.send_in_window = c.send_in_window;
    req.recv_in_window = c.recv_in_window;
    req.in_place = c.in_place;
    req.root = c.root;
    req.peer_copies = c.peer_copies;
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
              for (bool scaled : {false, true})
                for (bool peers : {false, true}) {
                  if (in_place && kind == Collective::AllToAll) continue;  // refused before any plan
                  if (scaled && !reduces(kind)) continue;
                  // In place, one buffer holds both sides: both lie in a window or neither does.
                  if (in_place && send_in != recv_in) continue;
                  check({kind, count, nranks, in_place, send_in, recv_in, scaled, 0, 2, peers});
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

TEST(CopyEnginePlan, AnAllReduceWithPeerCopiesPushesAndPullsAndStagesNothing) {
  // DDP's bucket at 3 ranks outside window memory: 1000 bf16, chunks of 336 (padded to 16 bytes), the
  // last one 328 long.
  PlanRequest r = request(Collective::AllReduce, 1000, 3);
  r.peer_copies = true;
  for (int rank = 0; rank < 3; ++rank) {
    r.rank = rank;
    const CopyEnginePlan p = plan_copy_engine_collective(r);
    ASSERT_EQ(p.steps.size(), 3u);
    EXPECT_EQ(p.steps[0].op, PlanStep::Op::Push);
    EXPECT_EQ(p.steps[1].op, PlanStep::Op::Sum);
    EXPECT_EQ(p.steps[2].op, PlanStep::Op::Pull);
    EXPECT_EQ(chunk_elements(p.steps[0], 0), 336u);
    EXPECT_EQ(chunk_elements(p.steps[0], 2), 328u);
    for (const PlanStep& s : p.steps) EXPECT_EQ(staged_elements(s), 0u);
    // The pool: the peers' chunks, this rank's result for the peers to pull, the barriers' part.
    EXPECT_EQ(p.input_elements, 0u);
    EXPECT_EQ(p.scratch_elements, 1008u);
    EXPECT_EQ(p.output_elements, 336u);
    EXPECT_EQ(p.barrier_bytes, 48u);
    const PoolLayout l = pool_layout(p, 2);
    EXPECT_EQ(l.barrier, 8192u);
    EXPECT_EQ(l.bytes, 12288u);
  }
  // 5 fp32 over 4 ranks: chunks of 4, so ranks 2 and 3 hold nothing: rank 3 sums nothing, and no
  // peer pulls from it.
  PlanRequest tiny = request(Collective::AllReduce, 5, 4, 4);
  tiny.peer_copies = true;
  tiny.rank = 3;
  const CopyEnginePlan t = plan_copy_engine_collective(tiny);
  ASSERT_EQ(t.steps.size(), 2u);
  EXPECT_EQ(t.steps[0].op, PlanStep::Op::Push);
  EXPECT_EQ(t.steps[1].op, PlanStep::Op::Pull);
  EXPECT_EQ(chunk_elements(t.steps[1], 1), 1u);
  EXPECT_EQ(chunk_elements(t.steps[1], 3), 0u);
  // Window memory that splits evenly keeps NCCL's exchange and all-gather, unstaged, no barriers.
  PlanRequest windowed = request(Collective::AllReduce, 1002, 3);
  windowed.peer_copies = windowed.send_in_window = windowed.recv_in_window = true;
  const CopyEnginePlan w = plan_copy_engine_collective(windowed);
  ASSERT_EQ(w.steps.size(), 3u);
  EXPECT_EQ(w.steps[0].op, PlanStep::Op::Exchange);
  EXPECT_EQ(w.steps[2].op, PlanStep::Op::AllGather);
  EXPECT_EQ(w.barrier_bytes, 0u);
  // An uneven one in window memory is pushed whole: one piece, nothing staged.
  windowed.count = 1049600;
  windowed.element_bytes = 4;
  EXPECT_EQ(pieces_within(windowed, size_t{256} << 20).size(), 1u);
  EXPECT_EQ(plan_copy_engine_collective(windowed).steps.front().op, PlanStep::Op::Push);
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

// Elements staged by every piece of `whole` (its pieces_within under `cap`).
uint64_t staged_in_pieces(const PlanRequest& whole, size_t cap) {
  uint64_t staged = 0;
  for (const CallPiece& piece : pieces_within(whole, cap))
    for (const PlanStep& step : plan_copy_engine_collective(piece_request(whole, piece)).steps)
      staged += staged_elements(step);
  return staged;
}

TEST(CopyEnginePlan, AnUnevenAllReduceInWindowMemoryStagesOnlyItsRemainder) {
  // DDP's buckets at 3 ranks: 1049600 fp32 (a 1024 x 1024 layer and its bias), no multiple of 3. The head,
  // 87466 vectors of 4 fp32 per rank (1049592 elements), runs where it lies; the 8 left over are staged,
  // a piece of their own, and the results are the whole call's (check_in_pieces above).
  PlanRequest bucket = request(Collective::AllReduce, 1049600, 3, 4);
  bucket.in_place = bucket.send_in_window = bucket.recv_in_window = true;
  for (int rank = 0; rank < 3; ++rank) {
    bucket.rank = rank;
    const std::vector<CallPiece> pieces = pieces_within(bucket, size_t{256} << 20);
    ASSERT_EQ(pieces.size(), 2u);
    EXPECT_EQ(pieces[0].offset, 0u);
    EXPECT_EQ(pieces[0].count, 1049592u);
    EXPECT_EQ(pieces[1].offset, 1049592u);
    EXPECT_EQ(pieces[1].count, 8u);
    EXPECT_EQ(plan_copy_engine_collective(piece_request(bucket, pieces[0])).chunk, 349864u);  // 4-fp32 vectors
    // The remainder's pool (two 4 KiB parts) is far below the head's (its scratch).
    EXPECT_EQ(pieces_pool_bytes(bucket, pieces), plan_pool_bytes(piece_request(bucket, pieces[0])));
    // A rank's own part of the remainder is read where it lies: at most 2 x 8 staged, in and out.
    EXPECT_GT(staged_in_pieces(bucket, size_t{256} << 20), 0u);
    EXPECT_LE(staged_in_pieces(bucket, size_t{256} << 20), 16u);
  }
  // Outside window memory nothing changes: one call, (n - 1) / n staged each way.
  PlanRequest plain = request(Collective::AllReduce, 1049600, 3, 4);
  EXPECT_EQ(pieces_within(plain, size_t{256} << 20).size(), 1u);
  EXPECT_GE(staged_in_pieces(plain, size_t{256} << 20), 2 * 1049600u * 2 / 3 - 16);
  // An even count, and a call under one granule, run whole (the latter staged).
  bucket.count = 3 * 4096;
  EXPECT_EQ(pieces_within(bucket, size_t{256} << 20).size(), 1u);
  EXPECT_EQ(staged_in_pieces(bucket, size_t{256} << 20), 0u);
  bucket.count = 4096 + 1;
  EXPECT_EQ(pieces_within(bucket, size_t{256} << 20).size(), 1u);
  EXPECT_GT(staged_in_pieces(bucket, size_t{256} << 20), 0u);
  // bf16 under a cap: the head's pieces are multiples of the granule and of 3 vectors of 8 (12288).
  PlanRequest capped = request(Collective::AllReduce, 1000001, 3);
  capped.send_in_window = capped.recv_in_window = true;
  const std::vector<CallPiece> cut = pieces_within(capped, size_t{1} << 20);
  ASSERT_GT(cut.size(), 2u);
  for (size_t k = 0; k + 2 < cut.size(); ++k) EXPECT_EQ(cut[k].count % 12288, 0u) << "piece " << k;
  EXPECT_EQ(cut[cut.size() - 2].count % 24, 0u);  // the head's last piece: shorter, whole vectors per rank
  EXPECT_EQ(cut.back().offset + cut.back().count, 1000001u);
  EXPECT_LT(cut.back().count, 24u);
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
  // A reduce-scatter outside window memory: 600 bytes of staged input, no output part (the sum
  // writes recv), 600 bytes of scratch; each part on its own 4 KiB, an empty one taking none.
  const CopyEnginePlan p = plan_copy_engine_collective(request(Collective::ReduceScatter, 100, 3));
  const PoolLayout l = pool_layout(p, 2);
  EXPECT_EQ(l.input, 0u);
  EXPECT_EQ(l.output, 4096u);
  EXPECT_EQ(l.scratch, 4096u);
  EXPECT_EQ(l.bytes, 8192u);
  // An all-to-all's input and output parts.
  const PoolLayout a = pool_layout(plan_copy_engine_collective(request(Collective::AllToAll, 100, 3)), 2);
  EXPECT_EQ(a.output, 4096u);
  EXPECT_EQ(a.scratch, 8192u);
  EXPECT_EQ(a.bytes, 8192u);
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

// The request of the whole call `c` on rank `rank`.
PlanRequest whole_request(const Case& c, int rank) {
  PlanRequest whole;
  whole.kind = c.kind;
  whole.count = c.count;
  whole.nranks = c.nranks;
  whole.rank = rank;
  whole.element_bytes = c.element_bytes;
  whole.send_in_window = c.send_in_window;
  whole.recv_in_window = c.recv_in_window;
  whole.in_place = c.in_place;
  whole.root = c.root;
  whole.peer_copies = c.peer_copies;
  return whole;
}

// A call cut into pieces under a pool cap (pieces_within): each piece planned (piece_request) and run
// on every rank over its part of the buffers (each buffer's start moved by the piece's offset; the
// segments of a segmented kind stay the whole call's count apart), with a pool of its own size; the
// whole result must be the call's. `pieces` gets how many pieces it took.
void check_in_pieces(const Case& c, size_t cap, uint64_t granularity, size_t* pieces_taken = nullptr) {
  SCOPED_TRACE(describe(c) + " cap " + std::to_string(cap) + " granularity " + std::to_string(granularity));
  const std::vector<CallPiece> pieces = pieces_within(whole_request(c, 0), cap, granularity);
  if (pieces_taken) *pieces_taken = pieces.size();
  // Every rank cuts the call alike (the pieces are collective calls).
  for (int r = 1; r < c.nranks; ++r) {
    const std::vector<CallPiece> theirs = pieces_within(whole_request(c, r), cap, granularity);
    ASSERT_EQ(theirs.size(), pieces.size()) << "rank " << r;
    for (size_t k = 0; k < pieces.size(); ++k) ASSERT_EQ(theirs[k].count, pieces[k].count) << "rank " << r;
  }
  uint64_t next = 0;
  for (const CallPiece& piece : pieces) {
    EXPECT_EQ(piece.offset, next);
    EXPECT_GT(piece.count, 0u);
    // Every piece starts on a granule but an unstaged all-reduce's staged remainder (under nranks vectors).
    if (pieces.size() > 1 && piece.count >= uint64_t(c.nranks) * (16 / c.element_bytes))
      EXPECT_EQ(piece.offset % granularity, 0u);
    next += piece.count;
  }
  EXPECT_EQ(next, c.count) << "the pieces cover the call exactly";
  // The cap holds unless one granule alone needs more; the first piece (whose pool the route
  // allocates, and which a captured call needs) needs the most.
  const bool granule_fits = plan_pool_bytes(piece_request(whole_request(c, 0), {0, granularity})) <= cap;
  // The buffers as the whole call has them; each piece's pool replaced by one of its own size.
  std::vector<RankMemory> ranks;
  for (int r = 0; r < c.nranks; ++r)
    ranks.push_back(memory_for(c, r, plan_copy_engine_collective(whole_request(c, r))));
  std::vector<std::map<PlanBuffer, View>> whole_views;
  for (const RankMemory& m : ranks) whole_views.push_back(m.views);
  for (const CallPiece& piece : pieces) {
    Case part = c;
    part.count = piece.count;
    std::vector<CopyEnginePlan> plans;
    for (int r = 0; r < c.nranks; ++r) {
      const PlanRequest req = piece_request(whole_request(c, r), piece);
      EXPECT_EQ(req.count, piece.count);
      plans.push_back(plan_copy_engine_collective(req));
      const size_t pool = pool_layout(plans.back(), c.element_bytes).bytes;
      // An unstaged all-reduce's staged remainder needs two 4 KiB parts, whatever the cap.
      const bool remainder = piece.count < uint64_t(c.nranks) * (16 / c.element_bytes);
      if (cap != 0 && (granule_fits || pieces.size() == 1))
        EXPECT_LE(pool, remainder ? std::max<size_t>(cap, 8192) : cap) << "piece at " << piece.offset;
      EXPECT_LE(pool, pieces_pool_bytes(whole_request(c, r), pieces))
          << "piece at " << piece.offset << " needs more than the call's pool";
      RankMemory& m = ranks[size_t(r)];
      const double nan = std::nan("");
      m.arrays["pool-input"].assign(plans.back().input_elements, nan);
      m.arrays["pool-output"].assign(plans.back().output_elements, nan);
      m.arrays["pool-scratch"].assign(plans.back().scratch_elements, nan);
      for (PlanBuffer b : {PlanBuffer::Send, PlanBuffer::Recv}) {
        View v = whole_views[size_t(r)].at(b);
        v.offset += piece.offset;
        m.views[b] = v;
      }
    }
    ASSERT_NO_THROW(execute(part, plans, ranks));
    for (size_t r = 0; r < ranks.size(); ++r) ranks[r].views = whole_views[r];
  }
  const uint64_t recv = recv_elements(c.kind, c.count, c.nranks);
  for (int r = 0; r < c.nranks; ++r)
    for (uint64_t i = 0; i < recv; ++i)
      ASSERT_EQ(ranks[size_t(r)].at({PlanBuffer::Recv, 0}, i), expected(c, r, i)) << "rank " << r << " element " << i;
  // The input is left as it was, except where it is the output.
  if (!c.in_place)
    for (int r = 0; r < c.nranks; ++r)
      for (uint64_t i = 0; i < send_elements(c.kind, c.count, c.nranks); ++i)
        ASSERT_EQ(ranks[size_t(r)].arrays["send"][i], input_value(r, i)) << "rank " << r << " send " << i;
}

TEST(CopyEnginePlan, AllReducesAndBroadcastsLargerThanThePoolCapRunInPiecesWithTheWholeResult) {
  // Small granules and a small cap, so that short host arrays make several pieces: pool parts start on
  // 4 KiB boundaries, so an all-reduce's pool is at least 8 KiB (input and scratch, 2048 bf16 each).
  for (int nranks : {2, 3, 4})
    for (uint64_t count : {4096u, 5001u, 9000u})
      for (bool in_place : {false, true})
        for (bool scaled : {false, true}) {
          size_t taken = 0;
          check_in_pieces({Collective::AllReduce, count, nranks, in_place, false, false, scaled}, 8192, 64, &taken);
          if (HasFatalFailure()) return;
          EXPECT_GT(taken, 1u);
        }
  // In window memory: whole vectors per rank unstaged, cut under the cap, and the remainder staged.
  for (int nranks : {2, 3, 4})
    for (uint64_t count : {4096u, 5001u, 9000u})
      for (bool in_place : {false, true}) {
        size_t taken = 0;
        check_in_pieces({Collective::AllReduce, count, nranks, in_place, true, true, false}, 4096, 64, &taken);
        if (HasFatalFailure()) return;
        EXPECT_GT(taken, 1u);
      }
  // With peer copies: the pool holds the scratch, one chunk for the peers and the barriers' part.
  for (int nranks : {2, 3, 4})
    for (uint64_t count : {4096u, 5001u, 9000u})
      for (bool in_place : {false, true})
        for (bool in_window : {false, true}) {
          size_t taken = 0;
          const Case c{Collective::AllReduce, count, nranks, in_place, in_window, in_window, false, 0, 2, true};
          check_in_pieces(c, 12288, 64, &taken);
          if (HasFatalFailure()) return;
          EXPECT_EQ(taken > 1, plan_pool_bytes(whole_request(c, 0)) > 12288) << describe(c);
        }
  for (int nranks : {2, 3})
    for (int root = 0; root < nranks; ++root)
      for (bool in_place : {false, true}) {
        size_t taken = 0;
        check_in_pieces({Collective::Broadcast, 3000, nranks, in_place, false, false, false, root}, 4096, 64, &taken);
        if (HasFatalFailure()) return;
        EXPECT_GT(taken, 1u);
      }
}

// The pool a piece of `count` elements of `c` needs (granule-sized pieces make the caps below).
size_t piece_pool(const Case& c, uint64_t count) {
  return plan_pool_bytes(piece_request(whole_request(c, 0), {0, count}));
}

TEST(CopyEnginePlan, ReduceScattersAllGathersAndAllToAllsLargerThanThePoolCapRunInStridedPiecesWithTheWholeResult) {
  // Every segmented kind, 2 to 4 ranks, 2- and 4-byte elements, in place or not, in window memory or
  // not, per-rank counts that are no multiple of the granule (the last piece shorter), under caps
  // that leave the call whole, cut it in two, or in many (small granules, so short host arrays make
  // several pieces).
  constexpr uint64_t kGranule = 64;
  for (Collective kind : {Collective::ReduceScatter, Collective::AllGather, Collective::AllToAll})
    for (int nranks : {2, 3, 4})
      for (size_t element_bytes : {size_t(2), size_t(4)})
        for (uint64_t count : {uint64_t(5000), uint64_t(9001)})
          for (bool in_place : {false, true})
            for (bool in_window : {false, true})
              for (bool scaled : {false, true})
                for (bool peers : {false, true}) {
                  if (in_place && kind == Collective::AllToAll) continue;
                  if (scaled && !reduces(kind)) continue;
                  Case c{kind, count, nranks, in_place, in_window, in_window, scaled};
                  c.element_bytes = element_bytes;
                  c.peer_copies = peers;
                  // The whole call's own pool: one piece.
                  size_t taken = 0;
                  check_in_pieces(c, plan_pool_bytes(whole_request(c, 0)), kGranule, &taken);
                  if (HasFatalFailure()) return;
                  EXPECT_EQ(taken, 1u) << describe(c);
                  // About half: two pieces (a piece's parts round up to 4 KiB, so the second may be short).
                  const uint64_t half = (count / 2 + kGranule - 1) / kGranule * kGranule;
                  check_in_pieces(c, std::max<size_t>(piece_pool(c, half), 1), kGranule, &taken);
                  if (HasFatalFailure()) return;
                  if (piece_pool(c, count) > piece_pool(c, half)) EXPECT_EQ(taken, 2u) << describe(c);
                  // A pool of one granule's (or 8 KiB, if more): many pieces, every one within the cap.
                  check_in_pieces(c, std::max<size_t>(piece_pool(c, kGranule), 8192), kGranule, &taken);
                  if (HasFatalFailure()) return;
                  if (piece_pool(c, count) > 8192) EXPECT_GE(taken, 3u) << describe(c);
                  // A cap below one granule's need: granules, each over the cap by what it needs.
                  check_in_pieces(c, 1, kGranule, &taken);
                  if (HasFatalFailure()) return;
                  if (piece_pool(c, count) > 1) EXPECT_EQ(taken, (count + kGranule - 1) / kGranule) << describe(c);
                }
}

TEST(CopyEnginePlan, StridedPiecesStageTheirSegmentsInTwoDimensionalCopies) {
  // A reduce-scatter piece of 1024 of 4096 per rank, rank 2 of 4, fp32: the peers' segments of its
  // send (rows 4096 apart) staged into the pool, the rows before its own in one 2-D copy, the row
  // after in another; the sum reads its own segment from send and writes recv.
  PlanRequest whole = request(Collective::ReduceScatter, 4096, 4, 4);
  whole.rank = 2;
  const PlanRequest piece = piece_request(whole, {1024, 1024});
  EXPECT_EQ(piece.count, 1024u);
  EXPECT_EQ(piece.segment_stride, 4096u);
  CopyEnginePlan p = plan_copy_engine_collective(piece);
  ASSERT_EQ(p.steps.size(), 4u);
  EXPECT_EQ(p.steps[0].op, PlanStep::Op::Stage);
  EXPECT_EQ(p.steps[0].rows, 2u);
  EXPECT_EQ(p.steps[0].elements, 1024u);
  EXPECT_EQ(p.steps[0].from_pitch, 4096u);
  EXPECT_EQ(p.steps[0].to_pitch, 1024u);
  EXPECT_EQ(staged_elements(p.steps[0]), 2048u);
  EXPECT_EQ(p.steps[1].op, PlanStep::Op::Stage);
  EXPECT_EQ(p.steps[1].from.offset, 3u * 4096u);
  EXPECT_EQ(p.steps[1].to.offset, 3u * 1024u);
  EXPECT_EQ(staged_elements(p.steps[1]), 1024u);
  EXPECT_EQ(p.input_elements, 4096u);
  EXPECT_EQ(p.output_elements, 0u);
  EXPECT_EQ(p.steps[2].stride, 1024u);
  EXPECT_EQ(p.steps[3].own.buffer, PlanBuffer::Send);
  EXPECT_EQ(p.steps[3].own.offset, 2u * 4096u);
  EXPECT_EQ(p.steps[3].to.buffer, PlanBuffer::Recv);
  // In window memory: the exchange reads the send's segments where they are, 4096 apart; nothing staged.
  whole.send_in_window = whole.recv_in_window = true;
  p = plan_copy_engine_collective(piece_request(whole, {1024, 1024}));
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_EQ(p.steps[0].op, PlanStep::Op::Exchange);
  EXPECT_EQ(p.steps[0].from.buffer, PlanBuffer::Send);
  EXPECT_EQ(p.steps[0].stride, 4096u);
  EXPECT_EQ(p.steps[1].own.buffer, PlanBuffer::Send);
  EXPECT_EQ(p.steps[1].own.offset, 2u * 4096u);
  EXPECT_EQ(p.input_elements + p.output_elements, 0u);
  // An all-gather piece in place in window memory: NCCL cannot write the strided recv, so the data
  // lands in the pool and one 2-D copy puts every rank's part where it belongs.
  PlanRequest gather = request(Collective::AllGather, 4096, 4, 2);
  gather.rank = 1;
  gather.in_place = gather.send_in_window = gather.recv_in_window = true;
  p = plan_copy_engine_collective(piece_request(gather, {4096 - 1000, 1000}));
  ASSERT_FALSE(p.steps.empty());
  EXPECT_EQ(p.output_elements, 4000u);
  // Rank 1's own part of recv is its send (in place): the peers' parts come out of the pool, rank
  // 0's in one copy, ranks 2 and 3's in one 2-D copy.
  const PlanStep& out = p.steps.back();
  EXPECT_EQ(out.op, PlanStep::Op::Stage);
  EXPECT_EQ(out.to.buffer, PlanBuffer::Recv);
  EXPECT_EQ(out.rows, 2u);
  EXPECT_EQ(out.from.offset, 2000u);
  EXPECT_EQ(out.to.offset, 2u * 4096u);
  EXPECT_EQ(out.from_pitch, 1000u);
  EXPECT_EQ(out.to_pitch, 4096u);
  // The whole call (one piece) keeps NCCL's in-place all-gather alone.
  EXPECT_EQ(plan_copy_engine_collective(piece_request(gather, {0, 4096})).steps.size(), 1u);
}

// The route's staging: a rank's own chunk never goes through the pool. Per element of the larger
// caller buffer, outside window memory: all-reduce, reduce-scatter and all-to-all stage at most
// 2 (n - 1) / n, all-gather and broadcast at most 1 (so at most 1 at 2 ranks, for every kind); in
// window memory nothing. With peer copies: all-reduce and reduce-scatter nothing, all-to-all
// (n - 1) / n, all-gather 1 / n. Copy steps (the own chunk NCCL copies too) are not staging.
TEST(CopyEnginePlan, OnlyThePeersChunksAreStaged) {
  for (Collective kind : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather, Collective::AllToAll,
                          Collective::Broadcast})
    for (int nranks : {1, 2, 3, 4, 8})
      for (int rank = 0; rank < nranks; ++rank)
        for (bool in_place : {false, true})
          for (bool windows : {false, true})
            for (bool peers : {false, true}) {
              if (in_place && kind == Collective::AllToAll) continue;
              PlanRequest r = request(kind, uint64_t(nranks) * 64, nranks, 2);
              r.rank = rank;
              r.root = nranks - 1;
              r.in_place = in_place;
              r.send_in_window = r.recv_in_window = windows;
              r.peer_copies = peers;
              const CopyEnginePlan p = plan_copy_engine_collective(r);
              uint64_t staged = 0;
              for (const PlanStep& s : p.steps) staged += staged_elements(s);
              const double larger =
                  double(std::max(send_elements(kind, r.count, nranks), recv_elements(kind, r.count, nranks)));
              // With peer copies: all-reduce and reduce-scatter nothing, all-to-all one side, all-gather its input.
              const bool pushed = peers && (kind == Collective::AllReduce || kind == Collective::ReduceScatter);
              const double bound = windows || pushed                        ? 0.0
                                   : peers && kind == Collective::AllToAll  ? 1.0 * (nranks - 1) / nranks
                                   : peers && kind == Collective::AllGather ? 1.0 / nranks
                                   : kind == Collective::AllGather || kind == Collective::Broadcast
                                       ? 1.0
                                       : 2.0 * (nranks - 1) / nranks;
              EXPECT_LE(double(staged), bound * larger)
                  << to_string(kind) << " rank " << rank << " of " << nranks << (in_place ? " in place" : "")
                  << (windows ? " in windows" : "") << (peers ? " with peer copies" : "");
              if (nranks == 2) EXPECT_LE(double(staged), larger) << to_string(kind) << " at 2 ranks";
            }
}

TEST(CopyEnginePlan, ASegmentStrideShorterThanTheCountIsRefused) {
  PlanRequest r = request(Collective::AllToAll, 100, 2);
  r.segment_stride = 99;
  EXPECT_THROW(plan_copy_engine_collective(r), Error);
  PlanRequest ar = request(Collective::AllReduce, 100, 2);
  ar.segment_stride = 200;  // an all-reduce has no segments
  EXPECT_THROW(plan_copy_engine_collective(ar), Error);
}

TEST(CopyEnginePlan, PiecesStayWithinTheCapAndCallsThatFitRunWhole) {
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
  // A call that fits, and no cap: one piece, the whole call, of every kind.
  for (Collective kind : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather, Collective::AllToAll,
                          Collective::Broadcast})
    for (size_t cap : {size_t{1} << 40, size_t{0}}) {
      PlanRequest q = request(kind, 1 << 20, 4);
      const std::vector<CallPiece> one = pieces_within(q, cap);
      ASSERT_EQ(one.size(), 1u) << to_string(kind) << " cap " << cap;
      EXPECT_EQ(one[0].offset, 0u);
      EXPECT_EQ(one[0].count, uint64_t{1} << 20);
    }
  // Every kind larger than the cap is cut: FSDP2's all-gathers and reduce-scatters of 1 GiB of bf16
  // per rank at 8 ranks, an all-to-all of 512 MiB per peer, within the default 256 MiB.
  for (Collective kind : {Collective::ReduceScatter, Collective::AllGather, Collective::AllToAll}) {
    const PlanRequest big = request(kind, uint64_t{1} << 29, 8);
    const std::vector<CallPiece> cut = pieces_within(big, size_t{256} << 20);
    ASSERT_GT(cut.size(), 1u) << to_string(kind);
    for (const CallPiece& p : cut) EXPECT_LE(plan_pool_bytes(piece_request(big, p)), size_t{256} << 20);
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
