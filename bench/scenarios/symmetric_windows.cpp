#include "scenarios/symmetric_windows.h"

#include <algorithm>
#include <cstdint>

#include "harness/copy_engine_reduction.h"
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
  if (program.collective_kinds().empty()) return "the scenario issues no collective";
  for (const auto& op : program.ops()) {
    if (op.kind != Op::Kind::Collective || op.call.kind != CollectiveCall::Kind::AllReduce) continue;
    const std::string why = copy_engine_all_reduce_refusal(uint64_t(op.call.count), program.nranks());
    if (!why.empty()) return op.name + ": " + why;
  }
  return "";
}

int64_t copy_engine_scratch_bytes(const Program& program) {
  int64_t bytes = 0;
  for (const auto& op : program.ops()) {
    if (op.kind != Op::Kind::Collective) continue;
    if (op.call.kind != CollectiveCall::Kind::AllReduce && op.call.kind != CollectiveCall::Kind::ReduceScatter)
      continue;
    bytes = std::max(bytes, op.call.send_elements(program.nranks()) * int64_t(dtype_size(op.call.dtype)));
  }
  return bytes;
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
