#pragma once
// Window memory as the segments of a PyTorch MemPool: torch.cuda.MemPool over a CUDAPluggableAllocator
// that names tandem_window_segment_alloc and tandem_window_segment_free, the two C functions this
// module exports. tandem.torch makes DDP's rebuilt gradient buckets in such a pool, so the copy-engine
// route sums each bucket where it lies, unstaged (tandem/torch/ddp.py).
//
// PyTorch's caching allocator asks the pool for a segment only while a thread allocates to it
// (torch.cuda.use_mem_pool), and tandem.torch opens that only around DDP's bucket rebuild, after naming
// the route here (begin_window_segments). Each segment is window memory of that route: a buffer of the
// same size that PyTorch gave back before, else a new CopyEngineRoute::window_buffer(), which is
// collective. That holds because DDP's rebuild allocates the same sizes in the same order on every rank
// (it broadcasts rank 0's bucket assignment before it allocates), so every rank reuses the same buffers
// too. A segment is never freed here: window memory is the route's until it closes
// (forget_window_segments).
#include <cstddef>
#include <string>

#include "tandem/copy_engine_route.h"

namespace tandem_python {

// The route whose window memory this thread's segment requests take, until end_window_segments().
// Clears the error of an earlier request.
void begin_window_segments(tandem::CopyEngineRoute& route);
void end_window_segments();
// Why this thread's last segment request failed ("" when none did): PyTorch reports a failed request
// as an out-of-memory error, which tandem.torch replaces with this.
std::string window_segment_error();
// `route` is closing: its window memory goes with it, and a segment PyTorch gives back later is
// forgotten, never reused.
void forget_window_segments(const tandem::CopyEngineRoute& route);

}  // namespace tandem_python
