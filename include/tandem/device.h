#pragma once
// What the CUDA runtime says about the device and a kernel, in the occupancy model's terms.
#include <string>

#include "tandem/gpu_runtime.h"
#include "tandem/occupancy.h"

namespace tandem {

// Limits of `device` read from cudaDeviceProp (bandwidth from the catalogue when the model is known).
DeviceLimits query_device_limits(int device);

// Footprint of a runtime-registered kernel (cudaFuncGetAttributes) launched with these parameters.
KernelFootprint kernel_footprint(const void* func, int threads_per_block, size_t dynamic_smem,
                                 const std::string& name = {});

// Number of visible CUDA devices. Throws tandem::Error with the runtime's reason when none is
// usable (no driver, no device), so every command reports "no GPU visible" the same way.
int visible_gpu_count();

#if !defined(TANDEM_HIP)  // the HIP build has no NCCL (RCCL) yet
struct SoftwareVersions {
  int driver = 0;                   // cudaDriverGetVersion, e.g. 13000
  int runtime = 0;                  // cudaRuntimeGetVersion
  int nccl = 0;                     // ncclGetVersion, e.g. 22805
  std::string driver_text() const;  // "13.0"
  std::string runtime_text() const;
  std::string nccl_text() const;  // "2.28.5"
};
SoftwareVersions software_versions();
#endif

}  // namespace tandem
