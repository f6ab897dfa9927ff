#pragma once
// The driver functions the interposer itself calls (attributes, names, devices, events), taken from
// the libcuda the process already loaded, never loading it. Exported symbols are looked up by name
// with the real dlsym: each of these has a single ABI, so no version is involved.
//
// The launch entry points the interposer forwards to are not here: those are the real pointers of
// the hooks (real_symbols.h). cuLaunchKernelEx is here too because an NCCL launch that came in
// through cuLaunchKernel is re-issued through it to carry the priority attribute.
#include <optional>

#include "cuda_driver.h"

namespace tandem::preload {

struct DriverApi {
  CUresult (*cuFuncGetAttribute)(int*, CUfunction_attribute, CUfunction) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int) = nullptr;
  CUresult (*cuFuncGetName)(const char**, CUfunction) = nullptr;                              // CUDA >= 12.3
  CUresult (*cuKernelGetFunction)(CUfunction*, CUkernel) = nullptr;                           // CUDA >= 12.0, optional
  CUresult (*cuKernelSetAttribute)(CUfunction_attribute, int, CUkernel, CUdevice) = nullptr;  // optional
  CUresult (*cuCtxGetDevice)(CUdevice*) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuCtxGetStreamPriorityRange)(int*, int*) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventQuery)(CUevent) = nullptr;
  CUresult (*cuStreamIsCapturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  CUresult (*cuThreadExchangeStreamCaptureMode)(CUstreamCaptureMode*) = nullptr;  // optional
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**) = nullptr;
  CUresult (*cuLaunchKernelEx_ptsz)(const CUlaunchConfig*, CUfunction, void**, void**) = nullptr;

  // Whether every function above but the optional ones was found; without them the interposer only
  // counts launches. Computed once when the table is filled.
  bool complete = false;
};

// The table, filled on first use once libcuda is loaded; nullptr before that.
const DriverApi* driver_api();

// While alive, the calling thread's stream-capture mode is "relaxed", so that the interposer's own
// one-time driver calls (reading attributes, raising a smem limit, creating an event) can never
// invalidate a graph capture the program has running, in this thread or another. This is the
// documented way for a library to make such calls during capture.
class RelaxedCaptureMode {
 public:
  explicit RelaxedCaptureMode(const DriverApi& api);
  ~RelaxedCaptureMode();
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  const DriverApi& api_;
  CUstreamCaptureMode previous_ = CU_STREAM_CAPTURE_MODE_RELAXED;
  bool exchanged_ = false;
};

// The device of the calling thread's current context (its ordinal), if any.
std::optional<int> current_device(const DriverApi&);

}  // namespace tandem::preload
