#pragma once
// A fake CUDA driver (libcuda.so.1), cuBLAS (libcublas.so.13) and cuBLASLt (libcublasLt.so.13) for
// testing the interposer end to end on machines without a GPU: the same resolver and launch entry
// points as the real driver, a handful of functions with known footprints, H200 device attributes,
// and a record of every launch as the "driver" received it. Control functions (fake_cuda_*) let the
// test client play the program's part (lower a kernel's smem limit, start a capture, ...).
#include <cstdint>

extern "C" {

// Functions of the fake driver, by index.
enum FakeFunctionIndex {
  kFakeCompute = 0,          // "_Z12fill_computePjmj": 32 regs, no smem; 8 blocks/SM at 256 threads
  kFakeNccl = 1,             // "ncclDevKernel_AllReduce_Sum_f32_RING_LL": 32 regs
  kFakePersistent = 2,       // "_Z10persistentv": 200 KiB static smem, 1 block/SM
  kFakeLibraryKernel = 3,    // a CUkernel handle: CUfunction queries reject it
  kFakeLibraryFunction = 4,  // the current context's function of that kernel
  kFakeFragile = 5,          // "_Z7fragilev"
  kFakeCaptured = 6,         // "_Z8capturedv"
  kFakeFunctionCount = 7
};

struct FakeLaunchRecord {
  char entry[40];  // the driver entry point that received the launch
  int function;    // FakeFunctionIndex, -1 if unknown
  unsigned shared_mem_bytes;
  unsigned block_threads;
  int has_priority;
  int priority;
  int cooperative;
  unsigned cluster_size;  // from attributes, 0 if none
  unsigned attribute_count;
  int result;  // the CUresult returned
};

void* fake_cuda_function(int index);  // the handle (CUfunction or CUkernel)
int fake_cuda_launch_count();
FakeLaunchRecord fake_cuda_launch(int i);
int fake_cuda_function_limit(int index);  // current max dynamic smem of a function
void fake_cuda_set_function_limit(int index, int bytes);
void fake_cuda_fail_launches_above(int bytes);  // -1: off
void fake_cuda_set_capturing(int capturing);
void fake_cuda_set_collective_running(int running);      // every event not ready while set
void fake_cuda_set_stream_busy(void* stream, int busy);  // events last recorded on `stream` not ready
void* fake_cuda_own_address(const char* symbol);         // the fake's own definition of a symbol
int fake_cuda_capture_mode();                            // the calling thread's CUstreamCaptureMode
int fake_cuda_kernel_level_limit();                      // cuKernelSetAttribute's value for the CUkernel

}  // extern "C"
