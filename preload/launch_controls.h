#pragma once
// The two controls, applied to one launch of a known function: elevate an NCCL launch's priority,
// shape a compute launch's residency. Each issues the launch exactly once as the program would see
// it (retrying unmodified if the modified launch fails) and returns the driver's result.
#include "driver_api.h"
#include "function_record.h"
#include "launch.h"
#include "runtime.h"

namespace tandem::preload {

CUresult launch_collective(Runtime&, const DriverApi&, FunctionRecord&, const Launch&);
CUresult launch_compute(Runtime&, const DriverApi&, FunctionRecord&, const Launch&);

}  // namespace tandem::preload
