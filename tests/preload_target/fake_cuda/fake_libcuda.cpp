// The fake libcuda.so.1 (see fake_cuda.h). Implements exactly the driver API the interposer and the
// test client use; every other symbol is absent, as from a driver that lacks it.
#include <cuda.h>
#include <dlfcn.h>
#undef cuGetProcAddress

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "fake_cuda.h"

namespace {

struct FakeFunction {
  const char* name;
  int regs;
  int static_smem;
  int max_dynamic;  // the function's dynamic shared memory limit (48 KiB by default)
  bool is_kernel_handle;
};

FakeFunction g_functions[kFakeFunctionCount] = {
    {"_Z12fill_computePjmj", 32, 0, 48 * 1024, false},
    {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", 32, 0, 48 * 1024, false},
    {"_Z10persistentv", 32, 200 * 1024, 48 * 1024, false},
    {"_Z12library_fillv", 32, 0, 48 * 1024, true},
    {"_Z12library_fillv", 32, 0, 48 * 1024, false},
    {"_Z7fragilev", 32, 0, 48 * 1024, false},
    {"_Z8capturedv", 32, 0, 48 * 1024, false},
};

std::mutex g_mutex;
std::vector<FakeLaunchRecord> g_launches;
int g_fail_above = -1;
int g_capturing = 0;
int g_collective_running = 0;
// Events remember the stream they were last recorded on; an event is not ready while that stream is
// busy (fake_cuda_set_stream_busy) or while "a collective runs" (fake_cuda_set_collective_running).
struct FakeEvent {
  CUstream stream = nullptr;
};
std::set<CUstream> g_busy_streams;
thread_local CUstreamCaptureMode t_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

// Failures a test asks for through the client's environment (read at each call, so the client needs
// no control of its own): FAKE_CUDA_REFUSE_PRIORITY=1 refuses every launch that asks for a nonzero
// priority, as a driver rejecting the attribute would; FAKE_CUDA_NO_PRIORITY_RANGE=1 fails
// cuCtxGetStreamPriorityRange.
bool env_flag(const char* name) {
  const char* value = std::getenv(name);
  return value && std::strcmp(value, "1") == 0;
}

// Stricter than the real driver: while a capture is running, every non-launch call made outside
// relaxed capture mode fails, as a capture-unsafe call would invalidate the capture.
bool unsafe_now() { return g_capturing && t_mode != CU_STREAM_CAPTURE_MODE_RELAXED; }

int index_of(const void* handle) {
  for (int i = 0; i < kFakeFunctionCount; ++i)
    if (handle == &g_functions[i]) return i;
  return -1;
}

// The function whose limit applies to a launch of `handle` (a CUkernel runs as its context function).
int effective_index(const void* handle) {
  const int i = index_of(handle);
  return i == kFakeLibraryKernel ? kFakeLibraryFunction : i;
}

CUresult record(const char* entry, CUfunction f, unsigned smem, unsigned threads, const CUlaunchAttribute* attrs,
                unsigned count, bool cooperative) {
  std::lock_guard<std::mutex> lock(g_mutex);
  FakeLaunchRecord r{};
  std::strncpy(r.entry, entry, sizeof r.entry - 1);
  r.function = index_of(f);
  r.shared_mem_bytes = smem;
  r.block_threads = threads;
  r.cooperative = cooperative;
  r.attribute_count = count;
  for (unsigned i = 0; attrs && i < count; ++i) {
    if (attrs[i].id == CU_LAUNCH_ATTRIBUTE_PRIORITY) r.has_priority = 1, r.priority = attrs[i].value.priority;
    if (attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && attrs[i].value.cooperative) r.cooperative = 1;
    if (attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
      r.cluster_size = attrs[i].value.clusterDim.x * attrs[i].value.clusterDim.y * attrs[i].value.clusterDim.z;
  }
  const int fi = effective_index(f);
  CUresult result = CUDA_SUCCESS;
  if (fi < 0)
    result = CUDA_ERROR_INVALID_HANDLE;
  else if (static_cast<int>(smem) > g_functions[fi].max_dynamic)
    result = CUDA_ERROR_INVALID_VALUE;
  else if (g_fail_above >= 0 && static_cast<int>(smem) > g_fail_above)
    result = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  else if (r.has_priority && r.priority != 0 && env_flag("FAKE_CUDA_REFUSE_PRIORITY"))
    result = CUDA_ERROR_NOT_SUPPORTED;
  r.result = result;
  g_launches.push_back(r);
  return result;
}

}  // namespace

extern "C" {

// ---- control ------------------------------------------------------------------------------------
void* fake_cuda_function(int index) { return &g_functions[index]; }
int fake_cuda_launch_count() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return static_cast<int>(g_launches.size());
}
FakeLaunchRecord fake_cuda_launch(int i) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_launches.at(i);
}
int fake_cuda_function_limit(int index) { return g_functions[index].max_dynamic; }
void fake_cuda_set_function_limit(int index, int bytes) { g_functions[index].max_dynamic = bytes; }
void fake_cuda_fail_launches_above(int bytes) { g_fail_above = bytes; }
void fake_cuda_set_capturing(int capturing) { g_capturing = capturing; }
void fake_cuda_set_collective_running(int running) { g_collective_running = running; }
void fake_cuda_set_stream_busy(void* stream, int busy) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (busy)
    g_busy_streams.insert(static_cast<CUstream>(stream));
  else
    g_busy_streams.erase(static_cast<CUstream>(stream));
}

// ---- launches -----------------------------------------------------------------------------------
CUresult cuLaunchKernel(CUfunction f, unsigned, unsigned, unsigned, unsigned bx, unsigned by, unsigned bz,
                        unsigned smem, CUstream, void**, void**) {
  return record("cuLaunchKernel", f, smem, bx * by * bz, nullptr, 0, false);
}
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned, unsigned, unsigned, unsigned bx, unsigned by, unsigned bz,
                             unsigned smem, CUstream, void**, void**) {
  return record("cuLaunchKernel_ptsz", f, smem, bx * by * bz, nullptr, 0, false);
}
CUresult cuLaunchKernelEx(const CUlaunchConfig* c, CUfunction f, void**, void**) {
  return record("cuLaunchKernelEx", f, c->sharedMemBytes, c->blockDimX * c->blockDimY * c->blockDimZ, c->attrs,
                c->numAttrs, false);
}
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* c, CUfunction f, void**, void**) {
  return record("cuLaunchKernelEx_ptsz", f, c->sharedMemBytes, c->blockDimX * c->blockDimY * c->blockDimZ, c->attrs,
                c->numAttrs, false);
}
CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned, unsigned, unsigned, unsigned bx, unsigned by, unsigned bz,
                                   unsigned smem, CUstream, void**) {
  return record("cuLaunchCooperativeKernel", f, smem, bx * by * bz, nullptr, 0, true);
}
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned, unsigned, unsigned, unsigned bx, unsigned by,
                                        unsigned bz, unsigned smem, CUstream, void**) {
  return record("cuLaunchCooperativeKernel_ptsz", f, smem, bx * by * bz, nullptr, 0, true);
}

// ---- functions ----------------------------------------------------------------------------------
CUresult cuFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction f) {
  if (unsafe_now()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  const int i = index_of(f);
  if (i < 0 || g_functions[i].is_kernel_handle) return CUDA_ERROR_INVALID_HANDLE;
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      *value = g_functions[i].regs;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
      *value = g_functions[i].static_smem;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *value = g_functions[i].max_dynamic;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = 1024;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
      *value = 0;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}
CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute attribute, int value) {
  if (unsafe_now()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  const int i = index_of(f);
  if (i < 0 || g_functions[i].is_kernel_handle) return CUDA_ERROR_INVALID_HANDLE;
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_ERROR_INVALID_VALUE;
  if (value + g_functions[i].static_smem > 232448) return CUDA_ERROR_INVALID_VALUE;
  g_functions[i].max_dynamic = value;
  return CUDA_SUCCESS;
}
int g_kernel_level_limit = -1;  // what cuKernelSetAttribute last set on the CUkernel
CUresult cuKernelSetAttribute(CUfunction_attribute attribute, int value, CUkernel kernel, CUdevice) {
  if (unsafe_now()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (index_of(kernel) != kFakeLibraryKernel || attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    return CUDA_ERROR_INVALID_VALUE;
  g_kernel_level_limit = value;
  return CUDA_SUCCESS;
}
int fake_cuda_kernel_level_limit() { return g_kernel_level_limit; }

CUresult cuFuncGetName(const char** name, CUfunction f) {
  if (unsafe_now()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  const int i = index_of(f);
  if (i < 0 || g_functions[i].is_kernel_handle) return CUDA_ERROR_INVALID_HANDLE;
  *name = g_functions[i].name;
  return CUDA_SUCCESS;
}
CUresult cuKernelGetFunction(CUfunction* f, CUkernel kernel) {
  if (unsafe_now()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (index_of(kernel) != kFakeLibraryKernel) return CUDA_ERROR_INVALID_HANDLE;
  *f = reinterpret_cast<CUfunction>(&g_functions[kFakeLibraryFunction]);
  return CUDA_SUCCESS;
}

// ---- context, device, events, capture -----------------------------------------------------------
CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  const CUstreamCaptureMode previous = t_mode;
  t_mode = *mode;
  *mode = previous;
  return CUDA_SUCCESS;
}
int fake_cuda_capture_mode() { return static_cast<int>(t_mode); }

CUresult cuCtxGetDevice(CUdevice* device) {
  *device = 0;
  return CUDA_SUCCESS;
}
// The timeline's marks call this (preload/timeline_session.cpp): a driver call the fake CUPTI, when the
// process has one, traces as CUPTI traces the real one (fake_cupti.h).
CUresult cuDriverGetVersion(int* version) {
  *version = 13000;
  using ApiCall = void (*)(uint32_t);
  if (const auto traced = reinterpret_cast<ApiCall>(dlsym(RTLD_DEFAULT, "fake_cupti_api_call")))
    traced(2);  // CUPTI_DRIVER_TRACE_CBID_cuDriverGetVersion
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice) {
  if (unsafe_now()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = 9;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = 132;
      break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *value = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      *value = 2048;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
      *value = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
      *value = 65536;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
      *value = 65536;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
      *value = 233472;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *value = 232448;
      break;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK:
      *value = 1024;
      break;
    default:
      *value = 0;
  }
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char* name, int length, CUdevice) {
  std::strncpy(name, "NVIDIA H200", static_cast<size_t>(length));
  return CUDA_SUCCESS;
}
CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  if (env_flag("FAKE_CUDA_NO_PRIORITY_RANGE")) return CUDA_ERROR_NOT_SUPPORTED;
  *least = 0;
  *greatest = -5;
  return CUDA_SUCCESS;
}
CUresult cuEventCreate(CUevent* event, unsigned) {
  if (unsafe_now()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  *event = reinterpret_cast<CUevent>(new FakeEvent);
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent event, CUstream stream) {
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  reinterpret_cast<FakeEvent*>(event)->stream = stream;
  return CUDA_SUCCESS;
}
CUresult cuEventRecord_ptsz(CUevent event, CUstream stream) {
  return cuEventRecord(event, stream ? stream : CU_STREAM_PER_THREAD);
}
CUresult cuEventRecordWithFlags(CUevent event, CUstream stream, unsigned) { return cuEventRecord(event, stream); }
CUresult cuEventRecordWithFlags_ptsz(CUevent event, CUstream stream, unsigned) {
  return cuEventRecord_ptsz(event, stream);
}
CUresult cuStreamWaitEvent(CUstream, CUevent event, unsigned) {
  return event ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CUresult cuStreamWaitEvent_ptsz(CUstream stream, CUevent event, unsigned flags) {
  return cuStreamWaitEvent(stream, event, flags);
}
CUresult cuEventQuery(CUevent event) {
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  const std::lock_guard<std::mutex> lock(g_mutex);
  const bool busy = g_collective_running || g_busy_streams.count(reinterpret_cast<FakeEvent*>(event)->stream);
  return busy ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
CUresult cuStreamIsCapturing(CUstream, CUstreamCaptureStatus* status) {
  *status = g_capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

// ---- the resolver -------------------------------------------------------------------------------
CUresult cuGetProcAddress_v2(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
CUresult cuGetProcAddress(const char*, void**, int, cuuint64_t);

void* fake_cuda_own_address(const char* symbol) {
  struct Entry {
    const char* name;
    void* address;
  };
  static const Entry entries[] = {
      {"cuLaunchKernel", reinterpret_cast<void*>(&cuLaunchKernel)},
      {"cuLaunchKernel_ptsz", reinterpret_cast<void*>(&cuLaunchKernel_ptsz)},
      {"cuLaunchKernelEx", reinterpret_cast<void*>(&cuLaunchKernelEx)},
      {"cuLaunchKernelEx_ptsz", reinterpret_cast<void*>(&cuLaunchKernelEx_ptsz)},
      {"cuLaunchCooperativeKernel", reinterpret_cast<void*>(&cuLaunchCooperativeKernel)},
      {"cuLaunchCooperativeKernel_ptsz", reinterpret_cast<void*>(&cuLaunchCooperativeKernel_ptsz)},
      {"cuGetProcAddress", reinterpret_cast<void*>(&cuGetProcAddress)},
      {"cuGetProcAddress_v2", reinterpret_cast<void*>(&cuGetProcAddress_v2)},
      {"cuFuncGetAttribute", reinterpret_cast<void*>(&cuFuncGetAttribute)},
      {"cuEventCreate", reinterpret_cast<void*>(&cuEventCreate)},
      {"cuEventRecord", reinterpret_cast<void*>(&cuEventRecord)},
      {"cuEventRecord_ptsz", reinterpret_cast<void*>(&cuEventRecord_ptsz)},
      {"cuEventRecordWithFlags", reinterpret_cast<void*>(&cuEventRecordWithFlags)},
      {"cuEventRecordWithFlags_ptsz", reinterpret_cast<void*>(&cuEventRecordWithFlags_ptsz)},
      {"cuStreamWaitEvent", reinterpret_cast<void*>(&cuStreamWaitEvent)},
      {"cuStreamWaitEvent_ptsz", reinterpret_cast<void*>(&cuStreamWaitEvent_ptsz)},
  };
  for (const auto& e : entries)
    if (std::strcmp(e.name, symbol) == 0) return e.address;
  return nullptr;
}

// Like the real driver: base names, the _ptsz twin with the per-thread flag, cuGetProcAddress
// itself by version.
CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* status) {
  std::string name = symbol;
  if (name == "cuGetProcAddress") name = version >= 12000 ? "cuGetProcAddress_v2" : "cuGetProcAddress";
  void* found = nullptr;
  if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) found = fake_cuda_own_address((name + "_ptsz").c_str());
  if (!found) found = fake_cuda_own_address(name.c_str());
  *pfn = found;
  if (status) *status = found ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return found ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, version, flags, nullptr);
}

}  // extern "C"
