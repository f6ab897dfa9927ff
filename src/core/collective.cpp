#include "tandem/collective.h"

#include <iterator>

#include "tandem/enum_table.h"

namespace tandem {

namespace {

// Each kind's record, in the enum's order: a new collective kind is one row here (and one row in each
// layer's table of what the core cannot hold; the static_asserts there name them).
constexpr CollectiveRecord kRecords[] = {
    // kind, name, NCCL function, send/recv per rank, reduces, has root, in-place rule, in place routed,
    // bus factor, benchmarked
    {Collective::AllReduce, "all-reduce", "ncclAllReduce", false, false, true, false, InPlaceRule::SameBuffer, true,
     BusFactor::TwiceShare, true},
    {Collective::ReduceScatter, "reduce-scatter", "ncclReduceScatter", true, false, true, false,
     InPlaceRule::RecvIsOwnChunkOfSend, true, BusFactor::Share, true},
    {Collective::AllGather, "all-gather", "ncclAllGather", false, true, false, false, InPlaceRule::SendIsOwnChunkOfRecv,
     true, BusFactor::Share, true},
    {Collective::AllToAll, "all-to-all", "ncclAlltoAll", true, true, false, false, InPlaceRule::SameBuffer, false,
     BusFactor::Share, true},
    {Collective::Broadcast, "broadcast", "ncclBroadcast", false, false, false, true, InPlaceRule::SameBuffer, true,
     BusFactor::One, false},
};
static_assert(covers(kRecords, Collective::Broadcast), "one record per Collective");

constexpr bool records_in_order() {
  for (size_t i = 0; i < std::size(kRecords); ++i)
    if (static_cast<size_t>(kRecords[i].kind) != i) return false;
  return true;
}
static_assert(records_in_order(), "the records follow the enum's order");

constexpr bool benchmarked_are_listed() {
  size_t listed = 0;
  for (const CollectiveRecord& r : kRecords)
    if (r.benchmarked) {
      if (listed >= std::size(kBenchmarkCollectives) || kBenchmarkCollectives[listed] != r.kind) return false;
      ++listed;
    }
  return listed == std::size(kBenchmarkCollectives);
}
static_assert(benchmarked_are_listed(), "kBenchmarkCollectives lists the benchmarked records, in order");
static_assert(std::size(kCollectives) == size_t(kCollectiveCount) && std::size(kRecords) == size_t(kCollectiveCount),
              "kCollectives lists every kind");

uint64_t per_rank(bool segmented, uint64_t count, int nranks) {
  return segmented ? count * (nranks > 0 ? uint64_t(nranks) : 1) : count;
}

}  // namespace

const CollectiveRecord& record_of(Collective c) { return table_entry(kRecords, c); }

const char* to_string(Collective c) { return record_of(c).name; }

const char* nccl_function(Collective c) { return record_of(c).nccl_function; }

std::optional<Collective> parse_collective(std::string_view name) {
  for (Collective c : kCollectives) {
    const std::string_view ours = to_string(c);
    if (name.size() != ours.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i) same = name[i] == ours[i] || (ours[i] == '-' && name[i] == '_');
    if (same) return c;
  }
  return std::nullopt;
}

bool reduces(Collective c) { return record_of(c).reduces; }

uint64_t send_elements(Collective c, uint64_t count, int nranks) {
  return per_rank(record_of(c).send_per_rank, count, nranks);
}

uint64_t recv_elements(Collective c, uint64_t count, int nranks) {
  return per_rank(record_of(c).recv_per_rank, count, nranks);
}

uint64_t size_elements(Collective c, uint64_t count, int nranks) {
  const uint64_t send = send_elements(c, count, nranks), recv = recv_elements(c, count, nranks);
  return send > recv ? send : recv;
}

double bus_bandwidth_factor(Collective c, int nranks) {
  if (nranks <= 0) return 0;
  const double share = double(nranks - 1) / nranks;
  switch (record_of(c).bus_factor) {
    case BusFactor::TwiceShare:
      return 2 * share;
    case BusFactor::One:
      return 1;
    case BusFactor::Share:
      break;
  }
  return share;
}

bool is_in_place(Collective c, const void* send, const void* recv, uint64_t count, size_t element_bytes, int rank) {
  const auto* s = static_cast<const char*>(send);
  const auto* r = static_cast<const char*>(recv);
  const size_t own_chunk = size_t(count) * element_bytes * size_t(rank > 0 ? rank : 0);
  switch (record_of(c).in_place) {
    case InPlaceRule::SendIsOwnChunkOfRecv:
      return s == r + own_chunk;
    case InPlaceRule::RecvIsOwnChunkOfSend:
      return r == s + own_chunk;
    case InPlaceRule::SameBuffer:
      break;
  }
  return s == r;
}

}  // namespace tandem
