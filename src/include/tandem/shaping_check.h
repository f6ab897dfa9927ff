#pragma once
// The check of the targeted compute controls against what ran (`tandem run --timeline` under a
// shape policy; docs/RUN.md, "Targeted compute controls"): the interposer shapes a launch when it
// may run beside an outstanding collective, judged at launch time from the program's streams and
// events. The timeline sees what then ran, so it can say how good that judgement was, per device:
//
//   shaped beside      the shaped kernels that ran, for some of their time, beside communication,
//                      as a share of the shaped kernels (how much of the tax bought overlap)
//   beside shaped      of the computation's time beside communication in kernels the policy can
//                      shape, the share in shaped ones (how much of that overlap the rule reached);
//                      the rest of the time beside communication is in kernels the policy cannot
//                      shape (one block per SM, like cuBLAS's GEMMs; already at the target), counted apart
//   missed, issued later  of that shapeable time left alone, the time beside only collectives issued
//                      after the kernel (by the order of the calls): the rule decides at launch from
//                      what the program has issued, so it cannot see these coming; the rest of the
//                      time left alone ran beside a collective issued before the kernel, which the
//                      rule judged complete or ordered before it (an ordering the device did not keep)
//
// Each launch under the policy is one of three kinds: shaped, left alone by the rule (no collective
// outstanding beside it, though the policy would shape it), or one the policy cannot shape. A
// recorded kernel is told by its name and the dynamic shared memory it ran with
// (preload/launch_smem_values.h): a size noted for exactly one kind, with no other kind's sizes
// overflowed, is of that kind; anything else (a size noted for two kinds, or never noted) is
// unattributed and counted apart, never guessed. Pure: tested on CPU with synthetic records.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tandem/overlap.h"

namespace tandem {

// The kinds of launch (the first three are noted as launches happen), and a record none tells.
enum class LaunchForm : uint8_t { Shaped, LeftAlone, Unshapeable, Unattributed };
inline constexpr int kLaunchKinds = 3;
const char* to_string(LaunchForm);  // "shaped", "left-alone", "unshapeable", "unattributed"

// The sizes one kernel (by its name as CUPTI reports it) was launched with.
struct LaunchSizes {
  // By LaunchForm (Shaped, LeftAlone, Unshapeable): the sizes launches of that kind got.
  std::vector<uint32_t> sizes[kLaunchKinds];
  // More distinct sizes of that kind than were noted: a size not among the noted ones may be of it.
  bool overflowed[kLaunchKinds] = {false, false, false};
};
using LaunchSizesByName = std::map<std::string, LaunchSizes>;

// `sizes`: the kernel's, nullptr when it was never launched under the shape policy while recording
// (then Unattributed).
LaunchForm launch_form(const LaunchSizes* sizes, uint32_t dynamic_smem);

// One kernel of one device, as the check needs it.
struct KernelRun {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  LaunchForm form = LaunchForm::Unattributed;
  uint32_t issued = 0;  // its launch's place in the process's order of calls (Activity::issued); 0 unknown
};

struct ShapingCheck {
  uint64_t shaped = 0;         // shaped kernels that ran
  uint64_t shaped_beside = 0;  // ... beside communication for some of their time
  uint64_t beside = 0;         // attributed computation kernels beside communication
  // Computation time beside communication (a union over the streams) in attributed kernels, in those
  // the policy can shape (shaped or left alone), and in the shaped ones.
  int64_t beside_ns = 0;
  int64_t beside_shapeable_ns = 0;
  int64_t beside_shaped_ns = 0;
  // Of beside_shapeable_ns - beside_shaped_ns (left alone), the time beside only communication issued
  // after the kernel; communication or a kernel of unknown order counts as issued before.
  int64_t left_alone_beside_later_ns = 0;
  uint64_t unattributed = 0;  // kernels whose kind their size does not tell (left out of every figure)

  // shaped_beside / shaped; none without a shaped kernel.
  std::optional<double> shaped_beside_share() const;
  // beside_shaped_ns / beside_shapeable_ns; none without shapeable computation beside communication.
  std::optional<double> beside_shaped_share() const;
  // left_alone_beside_later_ns / (beside_shapeable_ns - beside_shaped_ns); none when nothing was left alone.
  std::optional<double> left_alone_later_share() const;
};

// `kernels`: the computation kernels of one device; `communication`: that device's communication
// intervals (any order, overlapping or not).
ShapingCheck check_shaping(const std::vector<KernelRun>& kernels, const std::vector<Activity>& communication);

// "shaped kernels: ..., beside communication: ..." for the summaries (no prefix, no newline). The
// JSON form, written by the interposer and read by `tandem run`, is shaping_check_json.h.
std::string shaping_check_text(const ShapingCheck& c);

}  // namespace tandem
