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

// X(name, parameters, required): each is a CUresult function. Without a required one the
// interposer only counts launches.
#define TANDEM_DRIVER_API(X)                                                      \
  X(cuFuncGetAttribute, (int*, CUfunction_attribute, CUfunction), true)           \
  X(cuFuncSetAttribute, (CUfunction, CUfunction_attribute, int), true)            \
  X(cuFuncGetName, (const char**, CUfunction), true)     /* CUDA >= 12.3 */       \
  X(cuKernelGetFunction, (CUfunction*, CUkernel), false) /* CUDA >= 12.0 */       \
  X(cuKernelSetAttribute, (CUfunction_attribute, int, CUkernel, CUdevice), false) \
  X(cuCtxGetDevice, (CUdevice*), true)                                            \
  X(cuDeviceGetAttribute, (int*, CUdevice_attribute, CUdevice), true)             \
  X(cuDeviceGetName, (char*, int, CUdevice), true)                                \
  X(cuCtxGetStreamPriorityRange, (int*, int*), true)                              \
  X(cuEventCreate, (CUevent*, unsigned), true)                                    \
  X(cuEventRecord, (CUevent, CUstream), true)                                     \
  X(cuEventQuery, (CUevent), true)                                                \
  X(cuStreamIsCapturing, (CUstream, CUstreamCaptureStatus*), true)                \
  X(cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode*), false)             \
  X(cuLaunchKernelEx, (const CUlaunchConfig*, CUfunction, void**, void**), true)  \
  X(cuLaunchKernelEx_ptsz, (const CUlaunchConfig*, CUfunction, void**, void**), true)

struct DriverApi {
#define TANDEM_DRIVER_API_FIELD(name, parameters, required) CUresult(*name) parameters = nullptr;
  TANDEM_DRIVER_API(TANDEM_DRIVER_API_FIELD)
#undef TANDEM_DRIVER_API_FIELD

  // Whether every required function was found. Computed once when the table is filled.
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
