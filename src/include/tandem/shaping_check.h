#pragma once
// The check of the targeted compute controls against what ran (`tandem run --timeline` under a
// shape policy; docs/RUN.md, "Targeted compute controls"): the interposer shapes a launch when it
// may run beside an outstanding collective, judged at launch time from the program's streams and
// events. The timeline sees what then ran, so it can say how good that judgement was, per device:
//
//   shaped beside      the shaped kernels that ran, for some of their time, beside communication,
//                      as a share of the shaped kernels (how much of the tax bought overlap)
//   beside shaped      of the computation's time beside communication, the share in shaped kernels
//                      (how much of the overlap the control reached)
//
// A recorded kernel is told shaped or not by its name and the dynamic shared memory it ran with
// (preload/launch_smem_values.h): a size the interposer gave it by shaping and never saw the program ask for
// is shaped, a size the program asked for and shaping never gave is not, and a size seen both ways
// (or a kernel launched with more sizes than are noted) is unattributed and counted apart. Kernels
// the interposer never saw launched (none under a shape policy, except what ran before the timeline
// started) are unshaped. Pure: tested on CPU with synthetic records.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tandem/overlap.h"

namespace tandem {

// The sizes one kernel (by its name as CUPTI reports it) was launched with.
struct LaunchSizes {
  std::vector<uint32_t> shaped;
  std::vector<uint32_t> natural;
  // More distinct sizes of that kind than were noted: a size not among the noted ones may be of it.
  bool shaped_overflowed = false;
  bool natural_overflowed = false;
};
using LaunchSizesByName = std::map<std::string, LaunchSizes>;

enum class LaunchForm : uint8_t { Natural, Shaped, Unattributed };
// `sizes`: the kernel's, nullptr when it was never launched under the shape policy while recording.
LaunchForm launch_form(const LaunchSizes* sizes, uint32_t dynamic_smem);

// One kernel of one device, as the check needs it.
struct KernelRun {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  LaunchForm form = LaunchForm::Natural;
};

struct ShapingCheck {
  uint64_t shaped = 0;           // shaped kernels that ran
  uint64_t shaped_beside = 0;    // ... beside communication for some of their time
  uint64_t beside = 0;           // computation kernels beside communication (shaped_beside of them shaped)
  int64_t beside_ns = 0;         // computation time beside communication (union over the streams), attributed kernels
  int64_t beside_shaped_ns = 0;  // ... of it in shaped kernels
  uint64_t unattributed = 0;     // kernels whose form their size does not tell (left out of every figure)

  // shaped_beside / shaped; none without a shaped kernel.
  std::optional<double> shaped_beside_share() const;
  // beside_shaped_ns / beside_ns; none without computation beside communication.
  std::optional<double> beside_shaped_share() const;
};

// `kernels`: the computation kernels of one device; `communication`: that device's communication
// intervals (any order, overlapping or not).
ShapingCheck check_shaping(const std::vector<KernelRun>& kernels, const std::vector<Activity>& communication);

// "shaped kernels: ..., beside communication: ..." for the summaries (no prefix, no newline). The
// JSON form, written by the interposer and read by `tandem run`, is shaping_check_json.h.
std::string shaping_check_text(const ShapingCheck& c);

}  // namespace tandem
