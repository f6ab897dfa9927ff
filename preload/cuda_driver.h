#pragma once
// <cuda.h> for the interposer. cuda.h maps the name cuGetProcAddress to cuGetProcAddress_v2 with a
// macro; in the interposer both names must mean themselves (two hooks with two ABIs, and the hook
// list's names are expanded unquoted). Every preload file includes this instead of <cuda.h>.
#include <cuda.h>
#undef cuGetProcAddress

// The hook list names the legacy-stream entry points and their _ptsz twins explicitly; with the
// per-thread default stream, cuda.h would rename the former to the latter.
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM) || defined(__CUDA_API_PER_THREAD_DEFAULT_STREAM)
#error "the interposer must not be compiled with the per-thread default stream"
#endif
