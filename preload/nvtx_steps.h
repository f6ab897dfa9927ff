#pragma once
// The program's steps, from its NVTX ranges (`tandem run --timeline --step-range PATTERN`). Under
// --timeline, `tandem run` points NVTX_INJECTION64_PATH at the interposer: NVTX then calls
// InitializeInjectionNvtx2 (timeline_session.cpp) at the program's first NVTX call in each library that uses
// NVTX, and these callbacks take the range calls of that library (push/pop and start/end, in any
// domain, with ASCII, wide or registered names). A range whose name matches the pattern (fnmatch), and
// that is not inside another such range on the same thread and domain, is a step: its host times are
// kept, and a mark at its start and one at its end (tandem_timeline_mark) place it in the order in
// which the process issued its GPU work. Every other NVTX call does nothing, as without a tool.
#include <cstdint>
#include <string>
#include <vector>

namespace tandem::preload {

// A step as NVTX saw it: host times (CLOCK_REALTIME, CUPTI's clock) and the ids of its two marks.
struct NvtxStep {
  std::string name;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint64_t start_mark = 0;
  uint64_t end_mark = 0;
};

using MarkFunction = void (*)(uint64_t id);

// Installs the callbacks into the NVTX instance whose export table `get_export_table` gives (NVTX's
// NvtxGetExportTableFunc_t). `pattern` selects the steps; `mark` is called with each new mark id.
// False when NVTX offers no callback table (the caller then answers NVTX with failure).
bool install_nvtx_step_callbacks(void* get_export_table, const std::string& pattern, MarkFunction mark);

// CUPTI's clock on Linux (CLOCK_REALTIME, as CUPTI documents), in nanoseconds: the steps' host times.
int64_t realtime_ns();

// The steps closed so far, in the order they opened; and how many are still open.
std::vector<NvtxStep> closed_nvtx_steps(uint64_t* still_open = nullptr);

}  // namespace tandem::preload
