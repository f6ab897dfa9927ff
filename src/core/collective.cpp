#include "tandem/collective.h"

#include "tandem/enum_table.h"

namespace tandem {

namespace {

// Each collective's names, in the enum's order.
struct CollectiveNames {
  const char* ours;
  const char* nccl;
};
constexpr CollectiveNames kNames[] = {
    {"all-reduce", "ncclAllReduce"}, {"reduce-scatter", "ncclReduceScatter"}, {"all-gather", "ncclAllGather"},
    {"all-to-all", "ncclAlltoAll"},  {"broadcast", "ncclBroadcast"},
};
static_assert(covers(kNames, Collective::Broadcast), "one entry per Collective");

}  // namespace

const char* to_string(Collective c) { return table_entry(kNames, c).ours; }

const char* nccl_function(Collective c) { return table_entry(kNames, c).nccl; }

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

bool reduces(Collective c) { return c == Collective::AllReduce || c == Collective::ReduceScatter; }

uint64_t send_elements(Collective c, uint64_t count, int nranks) {
  const uint64_t n = nranks > 0 ? uint64_t(nranks) : 1;
  switch (c) {
    case Collective::AllReduce:
    case Collective::AllGather:
    case Collective::Broadcast:
      return count;
    case Collective::ReduceScatter:
    case Collective::AllToAll:
      break;
  }
  return count * n;
}

uint64_t recv_elements(Collective c, uint64_t count, int nranks) {
  const uint64_t n = nranks > 0 ? uint64_t(nranks) : 1;
  switch (c) {
    case Collective::AllReduce:
    case Collective::ReduceScatter:
    case Collective::Broadcast:
      return count;
    case Collective::AllGather:
    case Collective::AllToAll:
      break;
  }
  return count * n;
}

uint64_t size_elements(Collective c, uint64_t count, int nranks) {
  const uint64_t send = send_elements(c, count, nranks), recv = recv_elements(c, count, nranks);
  return send > recv ? send : recv;
}

double bus_bandwidth_factor(Collective c, int nranks) {
  if (nranks <= 0) return 0;
  const double share = double(nranks - 1) / nranks;
  if (c == Collective::Broadcast) return 1;
  return c == Collective::AllReduce ? 2 * share : share;
}

bool is_in_place(Collective c, const void* send, const void* recv, uint64_t count, size_t element_bytes, int rank) {
  const auto* s = static_cast<const char*>(send);
  const auto* r = static_cast<const char*>(recv);
  const size_t own_chunk = size_t(count) * element_bytes * size_t(rank > 0 ? rank : 0);
  switch (c) {
    case Collective::AllGather:
      return s == r + own_chunk;
    case Collective::ReduceScatter:
      return r == s + own_chunk;
    case Collective::AllReduce:
    case Collective::AllToAll:
    case Collective::Broadcast:
      break;
  }
  return s == r;
}

}  // namespace tandem
