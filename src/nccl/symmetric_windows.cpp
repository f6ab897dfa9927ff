#include "tandem/symmetric_windows.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "tandem/cuda_check.h"
#include "tandem/error.h"
#include "tandem/nccl_check.h"

namespace tandem {

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
    TANDEM_REQUIRE(found < allocations.size(), "a collective's buffer lies in none of the allocations");
    const auto limit = reinterpret_cast<uintptr_t>(allocations[found].ptr) + uintptr_t(allocations[found].bytes);
    TANDEM_REQUIRE(r.bytes > 0 && end <= limit,
                   "a collective's buffer runs past the end of its allocation (" + std::to_string(r.bytes) + " bytes)");
    if (std::find(used.begin(), used.end(), found) == used.end()) used.push_back(found);
  }
  return used;
}

SymmetricWindows::SymmetricWindows(WaitRules rules) : rules_(std::move(rules)) {}

SymmetricWindows::~SymmetricWindows() {
  if (windows_.empty() || failed_ || std::uncaught_exceptions() > 0) return;
  try {
    release();
  } catch (...) {
    // Left to the communicators' destroy or abort (see the header).
  }
}

std::vector<ncclWindow_t> SymmetricWindows::add(ncclComm_t comm, const std::vector<ByteRange>& ranges,
                                                const std::string& what) {
  TANDEM_REQUIRE(!failed_, what + ": an earlier window registration or release failed");
  std::vector<ncclWindow_t> handles;
  for (size_t i = 0; i < ranges.size(); ++i) {
    Window w{comm, nullptr};
    try {
      TANDEM_NCCL_CHECK(comm, ncclCommWindowRegister(comm, const_cast<void*>(ranges[i].ptr), size_t(ranges[i].bytes),
                                                     &w.handle, NCCL_WIN_COLL_SYMMETRIC));
      // The communicator is non-blocking: the registration completes (and the handle is valid) only
      // once it reports success.
      await_communicator(comm, rules_, what + " window " + std::to_string(i + 1) + "/" + std::to_string(ranges.size()));
    } catch (...) {
      failed_ = true;
      throw;
    }
    windows_.push_back(w);
    handles.push_back(w.handle);
  }
  return handles;
}

bool SymmetricWindows::registered_on(ncclComm_t comm) const {
  return std::any_of(windows_.begin(), windows_.end(), [&](const Window& w) { return w.comm == comm; });
}

std::vector<ncclComm_t> SymmetricWindows::communicators() const {
  std::vector<ncclComm_t> out;
  for (const auto& w : windows_)
    if (std::find(out.begin(), out.end(), w.comm) == out.end()) out.push_back(w.comm);
  return out;
}

void SymmetricWindows::release(const std::string& what) {
  TANDEM_REQUIRE(!failed_ || windows_.empty(), "window release after a failed registration or release");
  // Every rank deregisters the same windows in the same (registration) order, each awaited, before
  // any buffer is freed.
  try {
    while (!windows_.empty()) {
      const Window w = windows_.front();
      TANDEM_NCCL_CHECK(w.comm, ncclCommWindowDeregister(w.comm, w.handle));
      await_communicator(w.comm, rules_, what + " window release");
      windows_.erase(windows_.begin());
    }
  } catch (...) {
    failed_ = true;
    throw;
  }
}

}  // namespace tandem
