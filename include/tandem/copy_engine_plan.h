#pragma once
// The steps of one copy-engine collective, as data: which buffer each step reads and writes, with
// what counts and offsets. Pure (no NCCL or CUDA), so the layout of every case (uneven counts,
// scaled reductions, in place or not, buffers inside the route's windows or not) is checked on CPU
// by simulating the ranks (tests/cpu/test_copy_engine_plan.cpp); the GPU executes the same steps
// (src/nccl/copy_engine_collectives.cu, execute_plan).
//
// The steps, each enqueued on the caller's stream in order:
//   Stage        copy `rows` rows of `elements` each, row k from `from` + k x `from_pitch` to `to` +
//                k x `to_pitch` (a copy within the GPU; one row: a plain copy, several: one 2-D
//                copy, cudaMemcpy2DAsync), where a buffer laid out in segments meets a pool part
//   Exchange     for every root r, every rank's chunk r (`from` + r x `stride`, `elements` long)
//                lands in chunk j (the sender's rank) of the root's `to`, by one ncclGather per root
//                on copy engines; the root's own chunk is copied when `own_chunk_copied`, else left
//                as it was
//   Copy         as Stage, for the local copy of a rank's own chunk that NCCL makes as well (an
//                out-of-place all-gather's, all-to-all's or broadcast root's): not staging
//   Sum          `to`[i] = the sum over ranks j of chunk j of `from` (`from` + j x `stride`), chunk
//                `own_index` read from `own` instead; each term scaled by the reduction's scalar
//                (average, pre-multiplied sum) in fp32, accumulated in fp32, rounded once: the
//                scaling costs no pass of its own; with `writes_also`, the result is stored at
//                `also` too (the caller's recv and the pool part the all-gather sends from)
//   AllGather    NCCL's in-place all-gather of chunk `rank` (`elements` long) of `to` on copy engines
//   Scatter      NCCL's scatter from `root` on copy engines: chunk r of the root's `from` (`elements`
//                long) lands in chunk r of rank r's `to`; `from` is read on the root alone
//   Push         for every peer r, chunk r of `from` (`from` + r x `stride`) lands in chunk `rank` of
//                rank r's `to` (a pool part), by this rank's copies into the peer's pool; the chunks
//                cover `span` elements of `from`, so the last ones are short or empty
//   Pull         for every peer j, chunk j of `to` (`to` + j x `stride`, `span` elements in all
//                likewise) comes from rank j's `from` (a pool part, the same place on every rank), by
//                this rank's copies out of the peer's pool
//
// Push and Pull reach the peers' pools by address (PlanRequest::peer_copies): the caller's buffer
// on this rank's side of the copy may be any device memory, so nothing is staged for the peers. Each
// starts once every rank has reached it (the pool parts it writes are free, those it reads are
// written) and ends once every rank's copies are over: a barrier on each side, an all-gather of 16
// bytes per rank in the pool's barrier part (PoolLayout::barrier).
//
// Staging: NCCL 2.28 runs a collective on copy engines only when both its buffers lie in registered
// symmetric windows, so a caller's buffer outside the route's windows goes through the pool; a
// rank's own chunk never does (the sum reads it from send and writes it into recv; an out-of-place
// copy of it is a Copy). Staged elements per element of the larger caller buffer: all-reduce,
// reduce-scatter, all-to-all at most 2 (n - 1) / n (1 at 2 ranks), all-gather and broadcast at most 1.
// With peer copies a send outside window memory is pushed from where it lies, and results are
// pulled straight into recv: an all-reduce (chunks pushed into the peers' scratch, results pulled
// from their pools) and a reduce-scatter (segments pushed) stage nothing, an all-to-all only its
// received segments out of the pool ((n - 1) / n), an all-gather only its input into the pool for
// the peers to pull (1 / n of recv).
//
// Reductions: reduce-scatter = Exchange into the scratch + Sum; all-reduce = that over chunks of
// ceil(count / nranks) (padded, so any count splits into equal chunks; the padding is never copied
// out) + AllGather. An all-reduce whose input is staged anyway pads its chunks to 16 bytes, so the
// sum kernel moves 16 bytes a load. Broadcast = Scatter of the root's data in chunks of
// ceil(count / nranks) (padded likewise) + AllGather: each rank's links carry the data about once,
// as in NCCL's ring, where a root sending the whole buffer to each peer would carry it nranks - 1
// times. Only the root stages its input; the collective steps are the same on every rank.
//
// Segments: a reduce-scatter's send, an all-gather's recv and both sides of an all-to-all hold one
// segment of `count` elements per rank. In a whole call they follow each other; in a piece of a
// larger call (pieces_within) they lie `segment_stride` elements apart (the whole call's count), the
// piece's part of each segment `count` long. The exchange reads a segmented send where it is
// (its stride), so a send in window memory is used in place either way; NCCL writes its outputs
// contiguously, so a strided recv is never written by NCCL: the data lands in a pool part and a
// 2-D Stage copies it out.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tandem/collective.h"
#include "tandem/copy_engine_eligibility.h"

namespace tandem {

enum class PlanBuffer : uint8_t { Send, Recv, PoolInput, PoolOutput, PoolScratch };
const char* to_string(PlanBuffer);

// A place in a buffer, in elements.
struct PlanAt {
  PlanBuffer buffer = PlanBuffer::Send;
  uint64_t offset = 0;
};

struct PlanStep {
  enum class Op : uint8_t { Stage, Exchange, Sum, AllGather, Scatter, Copy, Push, Pull };
  Op op = Op::Stage;
  PlanAt from, to, own;
  uint64_t elements = 0;
  // Exchange: elements between the chunks for consecutive roots; Sum: between the chunks it sums
  // (its `elements` may be fewer: the own chunk's part of a padded call)
  uint64_t stride = 0;
  int own_index = -1;             // Sum
  bool own_chunk_copied = false;  // Exchange
  int root = -1;                  // Scatter
  // Stage: rows of `elements`, `from_pitch` and `to_pitch` elements apart (>= `elements`; unused
  // for one row).
  uint64_t rows = 1, from_pitch = 0, to_pitch = 0;
  PlanAt also;               // Sum: the second place its result is stored, when writes_also
  bool writes_also = false;  // Sum
  // Push, Pull: the elements of the caller's buffer the chunks (`elements` long, `stride` apart)
  // cover; chunk j holds min(elements, span - min(j x stride, span)) of them.
  uint64_t span = 0;
};
// The elements of chunk j of a Push or a Pull (short or empty past `span`).
uint64_t chunk_elements(const PlanStep&, int j);
// One copy of rank `rank`'s part of a Push or a Pull: `elements` from `from` to `to`, where for a
// Push `from` is this rank's and `to` the peer's (its pool part), for a Pull the other way round.
struct PeerCopy {
  int peer = 0;
  PlanAt from, to;
  uint64_t elements = 0;
};
// Those copies, one per peer with anything to move, the next rank first (so that at once each rank
// starts on a different peer's link): what the GPU executes and the CPU simulation checks.
std::vector<PeerCopy> peer_copies(const PlanStep&, int rank, int nranks);
// The elements those copies move (0 for any other step).
uint64_t peer_elements(const PlanStep&, int rank, int nranks);
// What each rank contributes to a Push's or a Pull's barrier (an all-gather): one 16-byte vector.
inline constexpr uint64_t kBarrierBytesPerRank = 16;
// The elements a step stages within the GPU (Stage: every row; other steps, Copy among them: 0).
uint64_t staged_elements(const PlanStep&);
const char* to_string(PlanStep::Op);

// A call's request (the rule's, RouteRequest: kind, count, nranks, rank, element size, in place, root:
// route_request makes it) with where its buffers lie. A piece of a larger call keeps the whole call's
// in-place answer.
struct PlanRequest : RouteRequest {
  // The send buffer lies wholly in the route's window memory (a piece's: its whole span, every segment).
  bool send_in_window = false;
  bool recv_in_window = false;
  // The route reaches every peer's pool by address (NCCL's LSA team is the whole communicator): the
  // plans then move the caller's data by Push and Pull steps rather than staging it. The same on
  // every rank.
  bool peer_copies = false;
  // Segmented kinds (has_segments): elements between consecutive ranks' segments in the caller's
  // buffers, >= count; 0 means `count` (contiguous, a whole call). Pieces of a larger call set the
  // whole call's count. Other kinds: 0 (their buffers are one run of `count`).
  uint64_t segment_stride = 0;

  // One rank and 2-byte elements unless set (the plan needs both; the rule's defaults say "unknown").
  PlanRequest() {
    nranks = 1;
    element_bytes = 2;
  }
  PlanRequest(const RouteRequest& call, bool send_in_window, bool recv_in_window)
      : RouteRequest(call), send_in_window(send_in_window), recv_in_window(recv_in_window) {}
};
// Whether the kind's caller buffers hold one segment per rank (reduce-scatter's send, all-gather's
// recv, both sides of an all-to-all), which a piece of the call covers in part, strided.
bool has_segments(Collective);

struct CopyEnginePlan {
  uint64_t chunk = 0;  // reductions and broadcast: elements per rank (padded for an all-reduce and a broadcast)
  // The pool parts the steps use, in elements (0: unused).
  uint64_t input_elements = 0, output_elements = 0, scratch_elements = 0;
  // The pool part the barriers of Push and Pull steps use (16 bytes per rank), in bytes (0: none).
  uint64_t barrier_bytes = 0;
  std::vector<PlanStep> steps;
};

CopyEnginePlan plan_copy_engine_collective(const PlanRequest&);

// Where the pool parts lie, in bytes: each part starts on a 4 KiB boundary (the vector kernels want
// 16 bytes, NCCL's symmetric kernels are fastest on aligned buffers). A function of the call's
// arguments alone, so every rank lays its pool out alike, as NCCL_WIN_COLL_SYMMETRIC requires.
struct PoolLayout {
  size_t input = 0, output = 0, scratch = 0, barrier = 0;  // offsets
  size_t bytes = 0;                                        // the pool size the call needs
};
PoolLayout pool_layout(const CopyEnginePlan&, size_t element_bytes);

// An address range of window memory, and whether [address, address + bytes) lies wholly in one of
// them (a buffer partly inside a window is staged like one outside).
struct AddressRange {
  uintptr_t begin = 0;
  size_t bytes = 0;
};
bool lies_within(const std::vector<AddressRange>& windows, uintptr_t address, size_t bytes);

// A call whose plan needs more pool than the route may hold runs as consecutive pieces: calls of the
// same kind on consecutive parts of its buffers, each planned on its own, so the pool never exceeds
// the cap whatever the model's size. Every kind is cut: piece [offset, offset + count) covers those
// elements of an all-reduce's or a broadcast's buffers, and of every rank's segment of a segmented
// kind's (an all-gather's piece writes recv + r x whole count + offset for each rank r; a
// reduce-scatter's reads send + r x whole count + offset and writes recv + offset; an all-to-all's
// both), its plan with segment_stride = the whole call's count. Each element's result is computed as
// in the whole call (a reduce-scatter's element i of rank r: the terms of every rank j's send[r x
// count + i] in rank order, scaled alike, rounded once; an all-reduce's likewise), so a cut call's
// results are bitwise the whole call's.
struct CallPiece {
  uint64_t offset = 0;  // elements from the start of the buffers (of each segment, for segmented kinds)
  uint64_t count = 0;   // NCCL's count for the piece
};
// The pieces of `whole` under `max_pool_bytes` (0: no cap): one piece when the whole call fits; else
// pieces of equal count (the last one shorter), each a multiple of `granularity` elements (so each
// piece's parts keep the whole buffers' alignment), the largest that fit. A call that does not fit
// even at one granule is cut into granules (the cap is then exceeded by what one granule needs).
// An all-reduce whose send lies in window memory and whose count is no multiple of nranks (of at
// least one granule), without peer copies, runs as its head, the most whole 16-byte vectors per rank, in window memory
// and unstaged (cut as above, in multiples of the granule and of nranks vectors), and then its remainder (under nranks
// vectors) staged, a piece of its own (two 4 KiB pool parts, which a cap below 8 KiB does not hold): the whole call's
// plan would stage all of it. Placement decides the pieces, so it must be the same on every rank (as the route
// requires).
std::vector<CallPiece> pieces_within(const PlanRequest& whole, size_t max_pool_bytes, uint64_t granularity = 4096);
// The pool that `whole`'s pieces (pieces_within's) need, in bytes: the largest piece's.
size_t pieces_pool_bytes(const PlanRequest& whole, const std::vector<CallPiece>& pieces);
// The request of one piece of `whole`: its count, the whole call's segment stride for a segmented
// kind, the rest (placement, in place, root) the whole call's; its buffers start `piece.offset`
// elements into the whole call's (rank 0's segment, for segmented buffers).
PlanRequest piece_request(const PlanRequest& whole, const CallPiece& piece);
// The pool `request` needs, in bytes.
size_t plan_pool_bytes(const PlanRequest& request);

}  // namespace tandem
