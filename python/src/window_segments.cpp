#include "window_segments.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

namespace tandem_python {
namespace {

struct Segment {
  const tandem::CopyEngineRoute* route = nullptr;
  size_t bytes = 0;
};

// Every segment handed out, by address, and those PyTorch gave back, by route and size (last in, first
// out: the same on every rank, whose requests and returns are the same). PyTorch may give a segment back
// on any thread (torch.cuda.empty_cache), hence the lock, and while the process exits (a MemPool freed
// late), hence a table that is never destroyed.
struct Segments {
  std::mutex lock;
  std::map<const void*, Segment> handed_out;
  std::map<std::pair<const tandem::CopyEngineRoute*, size_t>, std::vector<void*>> given_back;
};

Segments& segments() {
  static Segments* const table = new Segments;
  return *table;
}

thread_local tandem::CopyEngineRoute* requesting_route = nullptr;
thread_local std::string last_error;

void* take_segment(size_t bytes) {
  if (requesting_route == nullptr)
    throw std::runtime_error(
        "a window memory pool was asked for memory outside tandem.torch's bucket rebuild (no route named)");
  Segments& t = segments();
  {
    std::lock_guard<std::mutex> lock(t.lock);
    auto& free = t.given_back[{requesting_route, bytes}];
    if (!free.empty()) {
      void* p = free.back();
      free.pop_back();
      t.handed_out[p] = {requesting_route, bytes};
      return p;
    }
  }
  // Collective (every rank asks for the same sizes in the same order), and it waits on NCCL: not under
  // the lock.
  void* p = requesting_route->window_buffer(bytes);
  std::lock_guard<std::mutex> lock(t.lock);
  t.handed_out[p] = {requesting_route, bytes};
  return p;
}

}  // namespace

void begin_window_segments(tandem::CopyEngineRoute& route) {
  requesting_route = &route;
  last_error.clear();
}

void end_window_segments() { requesting_route = nullptr; }

std::string window_segment_error() { return last_error; }

void forget_window_segments(const tandem::CopyEngineRoute& route) {
  Segments& t = segments();
  std::lock_guard<std::mutex> lock(t.lock);
  for (auto it = t.handed_out.begin(); it != t.handed_out.end();)
    it = it->second.route == &route ? t.handed_out.erase(it) : std::next(it);
  for (auto it = t.given_back.begin(); it != t.given_back.end();)
    it = it->first.first == &route ? t.given_back.erase(it) : std::next(it);
}

}  // namespace tandem_python

// The allocator functions of torch.cuda.memory.CUDAPluggableAllocator: no exception may cross them into
// PyTorch, so a failure is a null pointer (PyTorch raises its out-of-memory error) and its reason is kept
// for window_segment_error().
extern "C" __attribute__((visibility("default"))) void* tandem_window_segment_alloc(size_t bytes, int /*device*/,
                                                                                    cudaStream_t /*stream*/) {
  using namespace tandem_python;
  try {
    return take_segment(bytes);
  } catch (const std::exception& e) {
    last_error = e.what();
  } catch (...) {
    last_error = "unknown error";
  }
  return nullptr;
}

// PyTorch gives a segment back (its pool emptied, or destroyed): kept for the next request of its size
// on its route. A segment of a closed route, or not from here, is forgotten.
extern "C" __attribute__((visibility("default"))) void tandem_window_segment_free(void* p, size_t /*bytes*/,
                                                                                  int /*device*/,
                                                                                  cudaStream_t /*stream*/) {
  using namespace tandem_python;
  Segments& t = segments();
  std::lock_guard<std::mutex> lock(t.lock);
  const auto it = t.handed_out.find(p);
  if (it == t.handed_out.end()) return;
  t.given_back[{it->second.route, it->second.bytes}].push_back(p);
  t.handed_out.erase(it);
}
