#pragma once
// The timeline in the program's process (`tandem run --timeline`, docs/RUN.md "The timeline"): when
// the configuration asks for it, the first CUDA activity the interposer sees (a kernel launch, or
// NVTX's initialisation) loads the recorder (timeline_recorder/tandem_timeline.h) bound to the one CUPTI of
// the process, and starts it; the program's NVTX ranges give the steps (nvtx_steps.h); at exit the
// records are flushed, turned into figures
// (timeline_figures.h), written to TANDEM_TIMELINE_DIR and handed to the exit report.
//
// Coexistence: CUPTI has one set of activity-buffer callbacks per process. A tool injected into
// CUDA or NVTX (Nsight Systems, Nsight Compute: CUDA_INJECTION64_PATH, a foreign
// NVTX_INJECTION64_PATH) or a program that registered its own callbacks first (torch.profiler's
// Kineto) keeps CUPTI: the timeline never starts (one warning). A program whose profiler registers
// later (cupti_hooks.cpp) gets CUPTI handed over: tandem's kinds are disabled and its buffers flushed
// before the program's registration goes through, so the program's profile holds only its own
// records; the timeline covers the run until then (one warning).
//
// Cost: nothing at all without --timeline (one check of the configuration on the launch path, and
// no CommunicationRegion does anything); with it, one relaxed atomic load per launch once started.
#include <atomic>

#include "timeline_figures.h"

namespace tandem::preload {

namespace timeline_detail {
extern std::atomic<bool> undecided;  // true until the first CUDA activity of the process
extern std::atomic<bool> recording;  // started and not stopped yet
void decide();
}  // namespace timeline_detail

// The launch hooks and NVTX's initialisation call this: the first call in a process decides (starts
// the timeline, or not); every later one is one relaxed load.
inline void timeline_note_activity() {
  if (timeline_detail::undecided.load(std::memory_order_relaxed)) timeline_detail::decide();
}

// Whether the recorder runs now: the launch path notes then what the timeline needs to tell shaped
// launches apart (launch_smem_values.h). One relaxed load.
inline bool timeline_recording() { return timeline_detail::recording.load(std::memory_order_relaxed); }

// The program registers CUPTI activity callbacks (its own profiler): tandem's recording, if any,
// stops first (flushed, every kind it enabled disabled). Never throws.
void timeline_yield_cupti();

// Around tandem's own communication work on this thread (an NCCL collective and its group end, the
// copy-engine route): the copies and memsets issued inside count as communication. Nothing unless
// recording.
class CommunicationRegion {
 public:
  CommunicationRegion();
  ~CommunicationRegion();
  CommunicationRegion(const CommunicationRegion&) = delete;
  CommunicationRegion& operator=(const CommunicationRegion&) = delete;

 private:
  bool pushed_ = false;
};

// NVTX's injection entry (InitializeInjectionNvtx2, exported by the interposer: `tandem run
// --timeline` points NVTX_INJECTION64_PATH at it). Starts the timeline if it has not started, and
// installs the step callbacks (nvtx_steps.h) when --step-range asks for steps; 0, which leaves NVTX's
// calls empty as without an injection, otherwise.
int timeline_nvtx_injection(void* get_export_table);

// The process's timeline for the exit report: finished (flushed, figures computed, files written)
// by the first call after the program's end. nullptr when the timeline is off, or in a process
// forked from the one that recorded.
const ProcessTimeline* timeline_result();

}  // namespace tandem::preload
