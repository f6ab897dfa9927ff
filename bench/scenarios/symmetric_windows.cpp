#include "scenarios/symmetric_windows.h"

#include <algorithm>
#include <cstdint>

#include "tandem/error.h"

namespace tandem::bench::scenarios {

std::vector<ByteRange> collective_ranges(const Program& program) {
  std::vector<ByteRange> ranges;
  for (const auto& op : program.ops()) {
    if (op.kind != Op::Kind::Collective) continue;
    const int64_t elem = static_cast<int64_t>(dtype_size(op.call.dtype));
    ranges.push_back({op.call.send, op.call.send_elements(program.nranks()) * elem});
    ranges.push_back({op.call.recv, op.call.recv_elements(program.nranks()) * elem});
  }
  return ranges;
}

std::string copy_engine_refusal(const Program& program) {
  for (const auto& op : program.ops())
    if (op.kind == Op::Kind::Collective &&
        (op.call.kind == CollectiveCall::Kind::AllGather || op.call.kind == CollectiveCall::Kind::AllToAll))
      return "";
  const std::string kinds = program.collective_kinds();
  return "the scenario issues " + (kinds.empty() ? std::string("no collective") : kinds) +
         ", and NCCL runs only all-gather and all-to-all on copy engines";
}

std::vector<size_t> containing_allocations(const std::vector<ByteRange>& allocations,
                                           const std::vector<ByteRange>& ranges) {
  std::vector<size_t> used;
  for (const auto& r : ranges) {
    const auto begin = reinterpret_cast<uintptr_t>(r.ptr);
    const auto end = begin + static_cast<uintptr_t>(r.bytes);
    size_t found = allocations.size();
    for (size_t i = 0; i < allocations.size() && found == allocations.size(); ++i) {
      const auto base = reinterpret_cast<uintptr_t>(allocations[i].ptr);
      if (begin >= base && begin < base + static_cast<uintptr_t>(allocations[i].bytes)) found = i;
    }
    TANDEM_REQUIRE(found < allocations.size(), "a collective's buffer lies in none of the scenario's allocations");
    const auto limit = reinterpret_cast<uintptr_t>(allocations[found].ptr) + uintptr_t(allocations[found].bytes);
    TANDEM_REQUIRE(r.bytes > 0 && end <= limit,
                   "a collective's buffer runs past the end of its allocation (" + std::to_string(r.bytes) + " bytes)");
    if (std::find(used.begin(), used.end(), found) == used.end()) used.push_back(found);
  }
  return used;
}

}  // namespace tandem::bench::scenarios
