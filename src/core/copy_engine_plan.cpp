#include "tandem/copy_engine_plan.h"

#include <algorithm>
#include <numeric>

#include "tandem/enum_table.h"
#include "tandem/error.h"

namespace tandem {
namespace {

constexpr size_t kPartAlignment = 4096;
constexpr size_t kVectorBytes = 16;

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
size_t align_up(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

PlanAt at(PlanBuffer b, uint64_t offset = 0) { return {b, offset}; }

// Elements the sum kernel moves in one 16-byte load (1 for element sizes that do not divide 16).
uint64_t elements_per_vector(size_t element_bytes) {
  return element_bytes && kVectorBytes % element_bytes == 0 ? kVectorBytes / element_bytes : 1;
}

// One vector of elements_per_vector per rank: the sum kernel's unit for a call's rank chunks.
uint64_t one_vector_per_rank(const PlanRequest& r) { return uint64_t(r.nranks) * elements_per_vector(r.element_bytes); }

// A step of `op` moving `elements` from `from` to `to`; the builders below set what else their op reads.
PlanStep plan_step(PlanStep::Op op, PlanAt from, PlanAt to, uint64_t elements) {
  PlanStep s;
  s.op = op;
  s.from = from;
  s.to = to;
  s.elements = elements;
  return s;
}

PlanStep stage(PlanAt from, PlanAt to, uint64_t elements) { return plan_step(PlanStep::Op::Stage, from, to, elements); }

// `rows` rows of `elements`, `from_pitch` and `to_pitch` apart: one copy when both sides are
// contiguous (a whole call's segments), else one 2-D copy.
PlanStep stage_rows(PlanAt from, uint64_t from_pitch, PlanAt to, uint64_t to_pitch, uint64_t elements, uint64_t rows) {
  if (rows == 1 || (from_pitch == elements && to_pitch == elements)) return stage(from, to, elements * rows);
  PlanStep s = stage(from, to, elements);
  s.rows = rows;
  s.from_pitch = from_pitch;
  s.to_pitch = to_pitch;
  return s;
}

PlanAt shifted(PlanAt a, uint64_t by) { return {a.buffer, a.offset + by}; }

// Stage steps for every rank's row but `own` (rows of `elements`, `from_pitch` and `to_pitch`
// apart): the rows before it and the rows after it, each as one copy. The own row is never staged:
// the exchange leaves a rank's own chunk where it is, and the sum reads it from the caller's buffer.
void stage_rows_but_own(std::vector<PlanStep>& steps, PlanAt from, uint64_t from_pitch, PlanAt to, uint64_t to_pitch,
                        uint64_t elements, uint64_t rows, uint64_t own) {
  if (own > 0) steps.push_back(stage_rows(from, from_pitch, to, to_pitch, elements, own));
  if (own + 1 < rows)
    steps.push_back(stage_rows(shifted(from, (own + 1) * from_pitch), from_pitch, shifted(to, (own + 1) * to_pitch),
                               to_pitch, elements, rows - own - 1));
}

// The same for one run of `count` elements cut into chunks of `chunk` (the last ones short or
// empty): the elements before the own chunk and those after it, each as one copy.
void stage_run_but_own(std::vector<PlanStep>& steps, PlanAt from, PlanAt to, uint64_t count, uint64_t chunk,
                       uint64_t own) {
  const uint64_t begin = std::min(own * chunk, count), end = std::min((own + 1) * chunk, count);
  if (begin > 0) steps.push_back(stage(from, to, begin));
  if (end < count) steps.push_back(stage(shifted(from, end), shifted(to, end), count - end));
}

PlanStep own_copy(PlanAt from, PlanAt to, uint64_t elements) {
  return plan_step(PlanStep::Op::Copy, from, to, elements);
}

PlanStep exchange(PlanAt from, uint64_t stride, PlanAt to, uint64_t elements, bool own_chunk_copied) {
  PlanStep s = plan_step(PlanStep::Op::Exchange, from, to, elements);
  s.stride = stride;
  s.own_chunk_copied = own_chunk_copied;
  return s;
}

// `elements` of each chunk summed; the chunks lie `chunk` apart in `chunks`.
PlanStep sum(PlanAt chunks, uint64_t chunk, PlanAt own, int own_index, PlanAt to, uint64_t elements) {
  PlanStep s = plan_step(PlanStep::Op::Sum, chunks, to, elements);
  s.own = own;
  s.stride = chunk;
  s.own_index = own_index;
  return s;
}

PlanStep all_gather(PlanAt buffer, uint64_t elements) {
  return plan_step(PlanStep::Op::AllGather, {}, buffer, elements);
}

PlanStep scatter(PlanAt from, PlanAt to, uint64_t elements, int root) {
  PlanStep s = plan_step(PlanStep::Op::Scatter, from, to, elements);
  s.root = root;
  return s;
}

// A Push (chunk r of `from` into slot `rank` of peer r's `to`) or a Pull (chunk j of `to` from peer
// j's `from`): chunks of `elements`, `stride` apart in the caller's buffer, covering `span` of it.
PlanStep peer_step(PlanStep::Op op, PlanAt from, PlanAt to, uint64_t elements, uint64_t stride, uint64_t span) {
  PlanStep s = plan_step(op, from, to, elements);
  s.stride = stride;
  s.span = span;
  return s;
}

// Elements between consecutive ranks' segments of the caller's segmented buffers (count: contiguous).
uint64_t segment_stride(const PlanRequest& r) { return r.segment_stride ? r.segment_stride : r.count; }

// Staging: the copy engines move data only between symmetric windows (NCCL 2.28 takes a copy-engine
// collective only when both its buffers lie in registered windows), so a caller's buffer outside the
// route's windows goes through the pool. Each plan stages only what peers must read or write there:
// a rank's own chunk or segment is read and written where it lies (the sum reads it from the
// caller's send and writes the result straight into the caller's recv; an out-of-place copy of it is
// the local copy NCCL makes as well, a Copy step), so an all-reduce, a reduce-scatter and an
// all-to-all stage (nranks - 1) / nranks of their data on each side they must, an all-gather and a
// broadcast the data once.

CopyEnginePlan plan_all_reduce(const PlanRequest& r) {
  CopyEnginePlan p;
  const uint64_t n = uint64_t(r.nranks);
  const bool even = r.count % n == 0;
  // Padded when the data must be moved anyway: staged into window memory, or pushed to the peers.
  const bool padded = !r.send_in_window || !even;
  if (padded) {
    const uint64_t per_vector = elements_per_vector(r.element_bytes);
    p.chunk = ceil_div(ceil_div(r.count, n), per_vector) * per_vector;
  } else {
    p.chunk = r.count / n;
  }
  p.scratch_elements = p.chunk * n;
  const uint64_t own = uint64_t(r.rank) * p.chunk;
  // This rank's elements of the result: its chunk, short or empty at the end of a padded call.
  const uint64_t own_elements = std::min(p.chunk, r.count - std::min(own, r.count));
  // The result goes where the peers read it: the caller's output when it is window memory the chunks
  // fill exactly (no padding; NCCL's all-gather completes it there); else, with peer copies, a pool
  // part of one chunk the peers pull from; else a pool part the all-gather completes (the staging
  // buffer: the peers' chunks there were read by the exchange before the all-gather overwrites
  // them, or one of its own), copied out after.
  const bool into_recv = r.recv_in_window && p.chunk * n == r.count;
  const bool push = r.peer_copies && padded;
  const bool pull = r.peer_copies && !into_recv;
  if (push) {
    // The peers' chunks of send go from where they lie straight into their scratch slots; the own
    // chunk stays (the sum reads it from send).
    p.steps.push_back(
        peer_step(PlanStep::Op::Push, at(PlanBuffer::Send), at(PlanBuffer::PoolScratch), p.chunk, p.chunk, r.count));
  } else {
    PlanAt input = at(PlanBuffer::Send);
    if (padded) {
      p.input_elements = p.chunk * n;
      input = at(PlanBuffer::PoolInput);
      stage_run_but_own(p.steps, at(PlanBuffer::Send), input, r.count, p.chunk, uint64_t(r.rank));
    } else if (!into_recv && !pull) {
      p.input_elements = r.count;  // the all-gather's buffer
    }
    // The exchange leaves the own chunk alone (own_chunk_copied false): the sum reads it from send.
    p.steps.push_back(exchange(input, p.chunk, at(PlanBuffer::PoolScratch), p.chunk, false));
  }
  const PlanAt gathered = into_recv ? at(PlanBuffer::Recv) : at(PlanBuffer::PoolInput);
  // In place (send is recv), the sum reads each of its own elements where it writes it.
  PlanStep total = sum(at(PlanBuffer::PoolScratch), p.chunk, shifted(at(PlanBuffer::Send), own), r.rank,
                       shifted(at(PlanBuffer::Recv), own), own_elements);
  if (pull) {
    p.output_elements = p.chunk;
    total.also = at(PlanBuffer::PoolOutput);  // what the peers pull
    total.writes_also = true;
  } else if (!into_recv) {
    total.also = shifted(gathered, own);  // what the all-gather sends the peers
    total.writes_also = true;
  }
  if (own_elements > 0) p.steps.push_back(total);
  if (pull) {
    p.steps.push_back(
        peer_step(PlanStep::Op::Pull, at(PlanBuffer::PoolOutput), at(PlanBuffer::Recv), p.chunk, p.chunk, r.count));
  } else {
    p.steps.push_back(all_gather(gathered, p.chunk));
    if (!into_recv) stage_run_but_own(p.steps, gathered, at(PlanBuffer::Recv), r.count, p.chunk, uint64_t(r.rank));
  }
  return p;
}

CopyEnginePlan plan_reduce_scatter(const PlanRequest& r) {
  CopyEnginePlan p;
  const uint64_t n = uint64_t(r.nranks);
  p.chunk = r.count;
  p.scratch_elements = r.count * n;
  // The send's segments, `pitch` apart: where they are in window memory (the exchange reads each at
  // its stride), else the peers' segments staged into the pool, contiguous.
  const uint64_t stride = segment_stride(r);
  // Rank j's chunk r lands in rank r's scratch slot j; rank r's own slot stays unwritten, and the
  // sum reads that chunk from the caller's send. The sum takes slot j's term for rank j in rank
  // order, as in the whole call: a piece's element is summed from the same terms in the same order.
  // The result goes straight into recv (the sum is this rank's own kernel); in place (recv is this
  // rank's segment of send) it reads each of its own elements where it writes it. A send outside
  // window memory is pushed into the peers' scratch from where it lies, with peer copies; else the
  // peers' segments are staged.
  if (r.peer_copies && !r.send_in_window) {
    p.steps.push_back(
        peer_step(PlanStep::Op::Push, at(PlanBuffer::Send), at(PlanBuffer::PoolScratch), r.count, stride, stride * n));
  } else {
    PlanAt input = at(PlanBuffer::Send);
    uint64_t pitch = stride;
    if (!r.send_in_window) {
      input = at(PlanBuffer::PoolInput);
      p.input_elements = r.count * n;
      stage_rows_but_own(p.steps, at(PlanBuffer::Send), stride, input, r.count, r.count, n, uint64_t(r.rank));
      pitch = r.count;
    }
    p.steps.push_back(exchange(input, pitch, at(PlanBuffer::PoolScratch), r.count, false));
  }
  p.steps.push_back(sum(at(PlanBuffer::PoolScratch), r.count, shifted(at(PlanBuffer::Send), uint64_t(r.rank) * stride),
                        r.rank, at(PlanBuffer::Recv), r.count));
  return p;
}

CopyEnginePlan plan_all_gather(const PlanRequest& r) {
  CopyEnginePlan p;
  const uint64_t n = uint64_t(r.nranks), me = uint64_t(r.rank);
  const uint64_t stride = segment_stride(r);
  // NCCL writes the gathered chunks contiguously: into the caller's recv when it is window memory
  // whose segments follow each other (a whole call), else into a pool part the peers' chunks are
  // copied out of after.
  PlanAt output = at(PlanBuffer::Recv);
  if (!r.recv_in_window || stride != r.count) {
    output = at(PlanBuffer::PoolOutput);
    p.output_elements = r.count * n;
  }
  const PlanAt own = shifted(output, me * r.count);
  if (r.peer_copies && !r.send_in_window && output.buffer != PlanBuffer::Recv) {
    // With peer copies the peers read this rank's input from its pool and write their segments of
    // recv themselves, where they lie: only the input is staged (1 / nranks of recv), and one pool
    // part of `count` (not nranks) is used.
    p.output_elements = r.count;
    p.steps.push_back(stage(at(PlanBuffer::Send), at(PlanBuffer::PoolOutput), r.count));
    p.steps.push_back(
        peer_step(PlanStep::Op::Pull, at(PlanBuffer::PoolOutput), at(PlanBuffer::Recv), r.count, stride, stride * n));
    if (!r.in_place) p.steps.push_back(own_copy(at(PlanBuffer::Send), at(PlanBuffer::Recv, me * stride), r.count));
    return p;
  }
  if (r.in_place && output.buffer == PlanBuffer::Recv) {
    // NCCL's in-place copy-engine all-gather copies nothing locally.
    p.steps.push_back(all_gather(output, r.count));
  } else if (r.send_in_window) {
    // Out of place (or a piece in place: its send is its part of recv, gathered into the pool), NCCL
    // would copy this rank's own chunk first, on the SMs, in one batch with the peers' copies: the
    // exchange leaves that copy to this rank's own gather, which no peer waits for.
    p.steps.push_back(exchange(at(PlanBuffer::Send), 0, output, r.count, true));
  } else {
    // A staged input goes straight into this rank's chunk of the output: the all-gather is then in
    // place.
    p.steps.push_back(stage(at(PlanBuffer::Send), own, r.count));
    p.steps.push_back(all_gather(output, r.count));
  }
  if (output.buffer != PlanBuffer::Recv)
    stage_rows_but_own(p.steps, output, r.count, at(PlanBuffer::Recv), stride, r.count, n, me);
  // recv's own segment holds the input where NCCL's steps wrote recv, or in place (it is the send);
  // else it is the copy NCCL makes too.
  const bool own_in_recv = output.buffer == PlanBuffer::Recv || r.in_place;
  if (!own_in_recv) p.steps.push_back(own_copy(at(PlanBuffer::Send), at(PlanBuffer::Recv, me * stride), r.count));
  return p;
}

CopyEnginePlan plan_all_to_all(const PlanRequest& r) {
  CopyEnginePlan p;
  const uint64_t n = uint64_t(r.nranks), me = uint64_t(r.rank);
  const uint64_t stride = segment_stride(r);
  if (r.peer_copies && !r.send_in_window) {
    // With peer copies the send's segments go from where they lie into slot `rank` of the peers'
    // pools; each rank copies the peers' slots out into recv: only that side is staged.
    p.output_elements = r.count * n;
    p.steps.push_back(
        peer_step(PlanStep::Op::Push, at(PlanBuffer::Send), at(PlanBuffer::PoolOutput), r.count, stride, stride * n));
    stage_rows_but_own(p.steps, at(PlanBuffer::PoolOutput), r.count, at(PlanBuffer::Recv), stride, r.count, n, me);
    p.steps.push_back(own_copy(at(PlanBuffer::Send, me * stride), at(PlanBuffer::Recv, me * stride), r.count));
    return p;
  }
  // The send's segments are read where they lie in window memory, at their stride; else the peers'
  // segments are staged. NCCL writes the received chunks contiguously, so a recv outside window
  // memory or strided (a piece's) is filled through a pool part, the peers' segments copied out.
  PlanAt input = at(PlanBuffer::Send), output = at(PlanBuffer::Recv);
  uint64_t pitch = stride;
  if (!r.send_in_window) {
    input = at(PlanBuffer::PoolInput);
    p.input_elements = r.count * n;
    stage_rows_but_own(p.steps, at(PlanBuffer::Send), stride, input, r.count, r.count, n, me);
    pitch = r.count;
  }
  if (!r.recv_in_window || stride != r.count) {
    output = at(PlanBuffer::PoolOutput);
    p.output_elements = r.count * n;
  }
  // NCCL's own copy-engine all-to-all copies this rank's chunk first, on the SMs, in one batch with
  // the peers' copies: the exchange leaves that copy to this rank's own gather when both sides are
  // the caller's; else it is a copy of its own from send to recv.
  const bool direct = input.buffer == PlanBuffer::Send && output.buffer == PlanBuffer::Recv;
  p.steps.push_back(exchange(input, pitch, output, r.count, direct));
  if (output.buffer != PlanBuffer::Recv)
    stage_rows_but_own(p.steps, output, r.count, at(PlanBuffer::Recv), stride, r.count, n, me);
  if (!direct)
    p.steps.push_back(own_copy(at(PlanBuffer::Send, me * stride), at(PlanBuffer::Recv, me * stride), r.count));
  return p;
}

CopyEnginePlan plan_broadcast(const PlanRequest& r) {
  CopyEnginePlan p;
  const uint64_t n = uint64_t(r.nranks);
  p.chunk = ceil_div(r.count, n);
  const bool even = p.chunk * n == r.count;
  const bool root = r.rank == r.root;
  // The buffer the scatter fills chunk by chunk and the all-gather completes: the caller's output
  // when it is window memory the chunks fill exactly, else a pool part (the padding is never copied out).
  PlanAt output = at(PlanBuffer::Recv);
  if (!r.recv_in_window || !even) {
    output = at(PlanBuffer::PoolOutput);
    p.output_elements = p.chunk * n;
  }
  // NCCL reads the scatter's input on the root alone: elsewhere it names the output, never read.
  PlanAt input = output;
  if (root) {
    if (r.send_in_window && even) {
      input = at(PlanBuffer::Send);  // in place when it is the output: the root's own chunk stays
    } else {
      // Staged into the output itself, so the scatter is in place on the root.
      p.steps.push_back(stage(at(PlanBuffer::Send), output, r.count));
    }
  }
  p.steps.push_back(scatter(input, output, p.chunk, r.root));
  p.steps.push_back(all_gather(output, p.chunk));
  if (output.buffer != PlanBuffer::Recv) {
    // The root has its data already: in place nothing moves, out of place the copy NCCL's root makes.
    if (!root)
      p.steps.push_back(stage(output, at(PlanBuffer::Recv), r.count));
    else if (!r.in_place)
      p.steps.push_back(own_copy(at(PlanBuffer::Send), at(PlanBuffer::Recv), r.count));
  }
  return p;
}

}  // namespace

namespace {

// Each kind's plan, in Collective's order.
using Planner = CopyEnginePlan (*)(const PlanRequest&);
constexpr Planner kPlanners[] = {plan_all_reduce, plan_reduce_scatter, plan_all_gather, plan_all_to_all,
                                 plan_broadcast};
static_assert(covers(kPlanners, Collective::Broadcast), "one plan per Collective");

// Each step's name, in PlanStep::Op's order.
constexpr const char* kOps[] = {"stage", "exchange", "sum", "all-gather", "scatter", "copy", "push", "pull"};
static_assert(covers(kOps, PlanStep::Op::Pull), "one entry per PlanStep::Op");
constexpr const char* kBufferNames[] = {"send", "recv", "pool-input", "pool-output", "pool-scratch"};
static_assert(covers(kBufferNames, PlanBuffer::PoolScratch), "one name per PlanBuffer");

}  // namespace

uint64_t staged_elements(const PlanStep& step) {
  return step.op == PlanStep::Op::Stage ? step.elements * step.rows : 0;
}

uint64_t peer_elements(const PlanStep& step, int rank, int nranks) {
  if (step.op != PlanStep::Op::Push && step.op != PlanStep::Op::Pull) return 0;
  uint64_t elements = 0;
  for (const PeerCopy& copy : peer_copies(step, rank, nranks)) elements += copy.elements;
  return elements;
}

uint64_t chunk_elements(const PlanStep& step, int j) {
  const uint64_t begin = std::min(uint64_t(j) * step.stride, step.span);
  return std::min(step.elements, step.span - begin);
}

std::vector<PeerCopy> peer_copies(const PlanStep& step, int rank, int nranks) {
  TANDEM_REQUIRE(step.op == PlanStep::Op::Push || step.op == PlanStep::Op::Pull,
                 std::string("copy-engine plan: peer copies of a ") + to_string(step.op) + " step");
  const bool push = step.op == PlanStep::Op::Push;
  std::vector<PeerCopy> out;
  for (int k = 1; k < nranks; ++k) {
    const int peer = (rank + k) % nranks;
    // Push: chunk `peer` of this rank's `from` into slot `rank` of the peer's `to`. Pull: chunk `peer`
    // of this rank's `to` from the peer's `from`. Either way the chunk is the peer's.
    const uint64_t elements = chunk_elements(step, peer);
    if (elements == 0) continue;
    const PlanAt from = push ? shifted(step.from, uint64_t(peer) * step.stride) : step.from;
    const PlanAt to =
        push ? shifted(step.to, uint64_t(rank) * step.elements) : shifted(step.to, uint64_t(peer) * step.stride);
    out.push_back({peer, from, to, elements});
  }
  return out;
}

bool has_segments(Collective kind) {
  const CollectiveRecord& r = record_of(kind);
  return r.send_per_rank || r.recv_per_rank;
}

const char* to_string(PlanStep::Op op) { return table_entry(kOps, op); }

const char* to_string(PlanBuffer b) { return table_entry(kBufferNames, b); }

CopyEnginePlan plan_copy_engine_collective(const PlanRequest& r) {
  TANDEM_REQUIRE(r.nranks >= 1 && r.rank >= 0 && r.rank < r.nranks,
                 "copy-engine plan: rank " + std::to_string(r.rank) + " of " + std::to_string(r.nranks));
  TANDEM_REQUIRE(r.count > 0 && r.element_bytes > 0, "copy-engine plan: an empty collective");
  TANDEM_REQUIRE(!r.in_place || record_of(r.kind).in_place_routed,
                 std::string("copy-engine plan: an in-place ") + to_string(r.kind));
  TANDEM_REQUIRE(
      r.segment_stride == 0 || (has_segments(r.kind) ? r.segment_stride >= r.count : r.segment_stride == r.count),
      std::string("copy-engine plan: a segment stride of ") + std::to_string(r.segment_stride) + " for a " +
          to_string(r.kind) + " of " + std::to_string(r.count));
  TANDEM_REQUIRE(
      !record_of(r.kind).has_root || (r.root >= 0 && r.root < r.nranks),
      "copy-engine plan: a broadcast from rank " + std::to_string(r.root) + " of " + std::to_string(r.nranks));
  CopyEnginePlan p = table_entry(kPlanners, r.kind)(r);
  // Push and Pull steps run between barriers, in a pool part of their own.
  const bool with_peers = std::any_of(p.steps.begin(), p.steps.end(), [](const PlanStep& s) {
    return s.op == PlanStep::Op::Push || s.op == PlanStep::Op::Pull;
  });
  if (with_peers) p.barrier_bytes = kBarrierBytesPerRank * uint64_t(r.nranks);
  return p;
}

PoolLayout pool_layout(const CopyEnginePlan& p, size_t element_bytes) {
  PoolLayout l;
  l.input = 0;
  l.output = align_up(size_t(p.input_elements) * element_bytes, kPartAlignment);
  l.scratch = l.output + align_up(size_t(p.output_elements) * element_bytes, kPartAlignment);
  l.barrier = l.scratch + align_up(size_t(p.scratch_elements) * element_bytes, kPartAlignment);
  l.bytes = l.barrier + align_up(size_t(p.barrier_bytes), kPartAlignment);
  return l;
}

size_t plan_pool_bytes(const PlanRequest& request) {
  return pool_layout(plan_copy_engine_collective(request), request.element_bytes).bytes;
}

namespace {

// The elements of an all-reduce in window memory that run unstaged, from its start: an all-reduce reads
// and writes window memory where it lies only when its chunks fill the buffer exactly (its plan), so a
// count that is no multiple of the rank count would stage the whole call - DDP's buckets at 3 ranks.
// The head, the most whole vectors per rank (chunks the sum kernel reads 16 bytes at a time), runs
// where it lies; the remainder, under nranks vectors, runs staged as a piece of its own. A call under
// one granule is staged whole: its staging costs less than the collective the remainder needs.
uint64_t unstaged_head(const PlanRequest& r, uint64_t granularity) {
  // With peer copies an uneven call stages nothing as it is (its chunks are pushed from where they lie).
  if (r.kind != Collective::AllReduce || !r.send_in_window || r.peer_copies || r.count % uint64_t(r.nranks) == 0)
    return r.count;
  const uint64_t vectors = one_vector_per_rank(r);
  const uint64_t head = r.count / vectors * vectors;
  return head >= granularity ? head : r.count;
}

// The pieces of the first `count` elements of `whole` under the cap (pieces_within's rule).
std::vector<CallPiece> pieces_of_run(const PlanRequest& whole, uint64_t count, size_t max_pool_bytes,
                                     uint64_t granularity) {
  const PlanRequest run = piece_request(whole, {0, count});
  if (max_pool_bytes == 0 || plan_pool_bytes(run) <= max_pool_bytes) return {{0, count}};
  // A piece's pool: a segmented kind's pieces are strided, and may be staged where the whole call
  // was not (NCCL writes no strided recv); the pool never shrinks as the count grows.
  const auto needs = [&](uint64_t granules) {
    return plan_pool_bytes(piece_request(whole, {0, granules * granularity}));
  };
  // The most granules whose pool fits (one when none does), by bisection over [1, granules in the
  // call): the whole call does not fit, so the answer is below the top.
  uint64_t fits = 1, above = ceil_div(count, granularity);
  while (above - fits > 1) {
    const uint64_t mid = fits + (above - fits) / 2;
    if (needs(mid) <= max_pool_bytes)
      fits = mid;
    else
      above = mid;
  }
  const uint64_t piece = fits * granularity;
  std::vector<CallPiece> out;
  for (uint64_t offset = 0; offset < count; offset += piece) out.push_back({offset, std::min(piece, count - offset)});
  return out;
}

}  // namespace

std::vector<CallPiece> pieces_within(const PlanRequest& whole, size_t max_pool_bytes, uint64_t granularity) {
  if (whole.count == 0) return {{0, 0}};
  granularity = std::max<uint64_t>(granularity, 1);
  const uint64_t head = unstaged_head(whole, granularity);
  if (head == whole.count) return pieces_of_run(whole, whole.count, max_pool_bytes, granularity);
  // The head's pieces stay whole vectors per rank (a multiple of both the granule and nranks vectors).
  std::vector<CallPiece> out =
      pieces_of_run(whole, head, max_pool_bytes, std::lcm(granularity, one_vector_per_rank(whole)));
  out.push_back({head, whole.count - head});
  return out;
}

size_t pieces_pool_bytes(const PlanRequest& whole, const std::vector<CallPiece>& pieces) {
  // The pieces of a run are equal but the last, shorter: the first needs the most of them; a staged
  // remainder (unstaged_head) may need more than an unstaged first piece.
  return std::max(plan_pool_bytes(piece_request(whole, pieces.front())),
                  plan_pool_bytes(piece_request(whole, pieces.back())));
}

PlanRequest piece_request(const PlanRequest& whole, const CallPiece& piece) {
  PlanRequest r = whole;
  r.count = piece.count;
  if (has_segments(whole.kind)) r.segment_stride = whole.segment_stride ? whole.segment_stride : whole.count;
  return r;
}

bool lies_within(const std::vector<AddressRange>& windows, uintptr_t address, size_t bytes) {
  for (const AddressRange& w : windows)
    if (address >= w.begin && bytes <= w.bytes && address - w.begin <= w.bytes - bytes) return true;
  return false;
}

}  // namespace tandem
