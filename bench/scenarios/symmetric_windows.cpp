#include "scenarios/symmetric_windows.h"

#include <algorithm>
#include <cstdint>

#include "tandem/copy_engine.h"
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

namespace {

tandem::Collective copy_engine_kind(CollectiveCall::Kind kind) {
  switch (kind) {
    case CollectiveCall::Kind::AllReduce:
      return tandem::Collective::AllReduce;
    case CollectiveCall::Kind::ReduceScatter:
      return tandem::Collective::ReduceScatter;
    case CollectiveCall::Kind::AllGather:
      return tandem::Collective::AllGather;
    case CollectiveCall::Kind::AllToAll:
      break;
  }
  return tandem::Collective::AllToAll;
}

}  // namespace

std::string copy_engine_refusal(const Program& program) {
  if (program.collective_kinds().empty()) return "the scenario issues no collective";
  for (const auto& op : program.ops()) {
    if (op.kind != Op::Kind::Collective) continue;
    // Scenario collectives sum: CollectiveCall has no other reduction.
    const std::string why = tandem::copy_engine_refusal(copy_engine_kind(op.call.kind), uint64_t(op.call.count),
                                                        program.nranks(), to_nccl(op.call.dtype), ncclSum);
    if (!why.empty()) return op.name + ": " + why;
  }
  return "";
}

int64_t copy_engine_scratch_bytes(const Program& program) {
  int64_t bytes = 0;
  for (const auto& op : program.ops())
    if (op.kind == Op::Kind::Collective)
      bytes = std::max(
          bytes, int64_t(tandem::copy_engine_scratch_bytes(copy_engine_kind(op.call.kind), uint64_t(op.call.count),
                                                           op.call.dtype, program.nranks())));
  return bytes;
}

}  // namespace tandem::bench::scenarios
