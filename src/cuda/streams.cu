#include <utility>

#include "tandem/cuda_check.h"
#include "tandem/streams.h"

namespace tandem {

StreamPriorityRange stream_priority_range() {
  StreamPriorityRange r;
  TANDEM_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&r.least, &r.greatest));
  return r;
}

PriorityStream::PriorityStream(int priority) : priority_(priority) {
  // Non-blocking: the legacy default stream must not serialise our compute and comm streams.
  TANDEM_CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, priority));
}

PriorityStream::~PriorityStream() {
  if (stream_) cudaStreamDestroy(stream_);
}

PriorityStream::PriorityStream(PriorityStream&& o) noexcept
    : stream_(std::exchange(o.stream_, nullptr)), priority_(o.priority_) {}

PriorityStream& PriorityStream::operator=(PriorityStream&& o) noexcept {
  if (this != &o) {
    if (stream_) cudaStreamDestroy(stream_);
    stream_ = std::exchange(o.stream_, nullptr);
    priority_ = o.priority_;
  }
  return *this;
}

PriorityStream make_comm_stream() { return PriorityStream(stream_priority_range().greatest); }
PriorityStream make_compute_stream() { return PriorityStream(stream_priority_range().least); }

}  // namespace tandem
