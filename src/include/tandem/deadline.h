#pragma once
// How every wait in tandem is bounded: a deadline on the steady clock (never the wall clock, which
// may jump), `seconds` from now.
#include <chrono>

namespace tandem {

using Deadline = std::chrono::steady_clock::time_point;

inline Deadline deadline_after(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace tandem
