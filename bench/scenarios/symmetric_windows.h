#pragma once
// Which of a scenario's buffers become NCCL symmetric windows (policies copy-engine and
// nccl-symmetric), as pure functions of the program (no GPU; tests/cpu/test_scenario_windows.cpp).
//
// NCCL registers whole buffers as windows and then finds, for each collective, the window that
// contains its send or receive pointer. A scenario's collectives often use a sub-range of one
// allocation (dp-backward's buckets in the flat gradient buffer, per-expert slices), so each range
// is mapped to the allocation that contains it (tandem::containing_allocations) and every such
// allocation is registered once. Registration is collective: every rank must register the same
// buffers in the same order, which first use in program order gives (every rank builds the same
// program over the same shapes).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "scenarios/program.h"
#include "tandem/symmetric_windows.h"

namespace tandem::bench::scenarios {

using tandem::ByteRange;
using tandem::containing_allocations;

// Every collective's send range then receive range, in program order (in-place collectives give the
// same range twice).
std::vector<ByteRange> collective_ranges(const Program& program);

// Why copy engines cannot apply to `program`, or "" when they can: every collective takes the
// copy-engine route (tandem/copy_engine.h), whose refusal names the first collective that cannot
// (an all-reduce that does not split into equal chunks).
std::string copy_engine_refusal(const Program& program);

// Bytes of the scratch buffer the copy-engine reductions need: the largest all-reduce or
// reduce-scatter send buffer; 0 when the program has neither.
int64_t copy_engine_scratch_bytes(const Program& program);

}  // namespace tandem::bench::scenarios
