#pragma once
// Reads, once per launched function, what the launch path needs from the driver: name, kind,
// registers, static shared memory, limits and compile-time cluster size.
#include <memory>

#include "config.h"
#include "driver_api.h"
#include "function_record.h"

namespace tandem::preload {

// Never fails: a record whose attributes could not be read has metadata_ok = false (its launches
// are counted and forwarded unchanged).
std::unique_ptr<FunctionRecord> describe_function(CUfunction handle, const DriverApi&, const PreloadConfig&);

// The per-context function behind a record on `device` (the current context's): the handle itself
// for a CUfunction; for a CUkernel, the function the driver loaded for the current context.
CUfunction function_in_current_context(FunctionRecord&, const DriverApi&, int device);

}  // namespace tandem::preload
