#pragma once
// The collectives tandem measures, routes and counts, and the facts every part of tandem needs about
// them: the benchmark, the copy-engine route, the interposer and tandem.torch all use this one
// record (pure C++: no NCCL or CUDA header).
//
// `count` always has NCCL's meaning for the kind: all-reduce, the elements of each buffer;
// reduce-scatter, the elements each rank receives; all-gather, the elements each rank sends;
// all-to-all, the elements sent to each peer; broadcast, the elements of each buffer.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tandem {

// The order is the route library's C ABI (preload/route/tandem_nccl_route.h): append only. The
// copy-engine route takes all five (a broadcast: DDP broadcasts its parameters and buffers, Megatron
// its batches); the benchmark measures the first four.
enum class Collective : uint8_t { AllReduce, ReduceScatter, AllGather, AllToAll, Broadcast };
inline constexpr Collective kCollectives[] = {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather,
                                              Collective::AllToAll, Collective::Broadcast};
inline constexpr int kCollectiveCount = 5;
// The collectives the benchmark measures: all but the broadcast.
inline constexpr Collective kBenchmarkCollectives[] = {Collective::AllReduce, Collective::ReduceScatter,
                                                       Collective::AllGather, Collective::AllToAll};

// NCCL's in-place rule for a kind: which placement of `send` against `recv` makes the call in place.
enum class InPlaceRule : uint8_t {
  SameBuffer,            // send == recv (all-reduce, all-to-all, broadcast)
  SendIsOwnChunkOfRecv,  // send is this rank's chunk of recv (all-gather)
  RecvIsOwnChunkOfSend,  // recv is this rank's chunk of send (reduce-scatter)
};

// nccl-tests' bus-bandwidth factor of a kind, over n ranks.
enum class BusFactor : uint8_t {
  TwiceShare,  // 2(n-1)/n: all-reduce
  Share,       // (n-1)/n: reduce-scatter, all-gather, all-to-all
  One,         // 1: broadcast
};

// One collective kind, nccl-tests' testColl in spirit: every pure fact a part of tandem needs about
// it. The kinds' records are one table in the enum's order (collective.cpp); code that cannot live
// in the core (an NCCL call, a kernel, a reference) is one table of its layer keyed by the kind.
struct CollectiveRecord {
  Collective kind;
  const char* name;           // tandem's: "all-reduce", ...
  const char* nccl_function;  // NCCL's: "ncclAllReduce", ...
  // Whether each side holds one segment of `count` elements per rank (else one run of `count`):
  // reduce-scatter's send, all-gather's recv, both sides of an all-to-all.
  bool send_per_rank;
  bool recv_per_rank;
  bool reduces;   // combines the ranks' data (reads a reduction op)
  bool has_root;  // one rank's data goes to every rank (reads a root)
  InPlaceRule in_place;
  // Whether the copy-engine route takes the in-place form (an in-place all-to-all is left to NCCL's
  // own rules).
  bool in_place_routed;
  BusFactor bus_factor;
  bool benchmarked;  // the benchmark measures it (kBenchmarkCollectives)
};
// The kind's record; a value past the enum (an int from a C caller) reads as the last one.
const CollectiveRecord& record_of(Collective);

// "all-reduce", "reduce-scatter", "all-gather", "all-to-all", "broadcast": tandem's names.
const char* to_string(Collective);
// NCCL's function: "ncclAllReduce", "ncclReduceScatter", "ncclAllGather", "ncclAlltoAll",
// "ncclBroadcast".
const char* nccl_function(Collective);
// tandem's name, or the same with '_' for '-' (Python's spelling); nullopt otherwise.
std::optional<Collective> parse_collective(std::string_view name);
// All-reduce and reduce-scatter combine the ranks' data; the others only move it.
bool reduces(Collective);

// Elements of each rank's send and receive buffer.
uint64_t send_elements(Collective, uint64_t count, int nranks);
uint64_t recv_elements(Collective, uint64_t count, int nranks);
// nccl-tests' size of a collective: the larger buffer (the all-reduce buffer, the all-gather output,
// the reduce-scatter input, the all-to-all buffer), in elements.
uint64_t size_elements(Collective, uint64_t count, int nranks);
// nccl-tests' bus-bandwidth factor: busbw = algbw x factor (all-reduce 2(n-1)/n, broadcast 1, the
// others (n-1)/n).
double bus_bandwidth_factor(Collective, int nranks);
// NCCL's in-place rule: the same buffer for all-reduce, all-to-all and broadcast; `send` is this rank's chunk
// of `recv` for all-gather; `recv` is this rank's chunk of `send` for reduce-scatter.
bool is_in_place(Collective, const void* send, const void* recv, uint64_t count, size_t element_bytes, int rank);

}  // namespace tandem
