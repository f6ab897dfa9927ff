// A stand-in for a CUDA program, run on the fake driver (fake_cuda.h) with and without the
// interposer by tests/cpu/test_preload_fake_driver.cpp. It reaches the driver the way the CUDA
// runtime does (dlopen libcuda.so.1 RTLD_LOCAL, dlsym cuGetProcAddress_v2, resolve every entry
// point), launches through each entry point in turn, and prints what the driver received for each
// step as one JSON object.
#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda.h>
#include <dlfcn.h>
#undef cuGetProcAddress

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "fake_cuda.h"

namespace {

using json = nlohmann::json;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fake_driver_client: %s\n", what.c_str());
  std::exit(2);
}

template <class Fn>
Fn symbol(void* library, const char* name) {
  void* p = dlsym(library, name);
  if (!p) fail(std::string("missing symbol ") + name);
  return reinterpret_cast<Fn>(p);
}

struct Driver {
  void* library = nullptr;
  decltype(&cuGetProcAddress_v2) resolve = nullptr;
  decltype(&cuLaunchKernel) launch = nullptr;
  decltype(&cuLaunchKernel) launch_ptsz = nullptr;  // the _ptsz twin: same ABI
  decltype(&cuLaunchKernelEx) launch_ex = nullptr;
  decltype(&cuLaunchCooperativeKernel) launch_cooperative = nullptr;
  // control
  decltype(&fake_cuda_function) function = nullptr;
  decltype(&fake_cuda_launch_count) launch_count = nullptr;
  decltype(&fake_cuda_launch) launch_record = nullptr;
  decltype(&fake_cuda_function_limit) function_limit = nullptr;
  decltype(&fake_cuda_set_function_limit) set_function_limit = nullptr;
  decltype(&fake_cuda_fail_launches_above) fail_above = nullptr;
  decltype(&fake_cuda_set_capturing) set_capturing = nullptr;
  decltype(&fake_cuda_set_collective_running) set_collective_running = nullptr;
  decltype(&fake_cuda_set_stream_busy) set_stream_busy = nullptr;
  // Stream ordering, resolved as the runtime resolves them (the targeted compute controls follow them).
  decltype(&cuEventCreate) event_create = nullptr;
  decltype(&cuEventRecord) event_record = nullptr;
  decltype(&cuEventRecordWithFlags) event_record_with_flags = nullptr;
  decltype(&cuStreamWaitEvent) stream_wait = nullptr;
  decltype(&cuStreamWaitEvent) stream_wait_ptsz = nullptr;
  decltype(&fake_cuda_own_address) own_address = nullptr;
  decltype(&fake_cuda_capture_mode) capture_mode = nullptr;

  CUfunction f(int index) const { return reinterpret_cast<CUfunction>(function(index)); }
};

void* resolve(const Driver& d, const char* name, cuuint64_t flags, int version = 12000) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult status{};
  if (d.resolve(name, &p, version, flags, &status) != CUDA_SUCCESS || !p) fail(std::string("cannot resolve ") + name);
  return p;
}

Driver open_driver() {
  Driver d;
  // As the CUDA runtime does it.
  d.library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!d.library) fail(std::string("dlopen libcuda.so.1: ") + dlerror());
  d.resolve = symbol<decltype(&cuGetProcAddress_v2)>(d.library, "cuGetProcAddress_v2");
  d.launch = reinterpret_cast<decltype(d.launch)>(resolve(d, "cuLaunchKernel", CU_GET_PROC_ADDRESS_DEFAULT));
  d.launch_ptsz = reinterpret_cast<decltype(d.launch_ptsz)>(
      resolve(d, "cuLaunchKernel", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM));
  d.launch_ex = reinterpret_cast<decltype(d.launch_ex)>(resolve(d, "cuLaunchKernelEx", CU_GET_PROC_ADDRESS_DEFAULT));
  d.launch_cooperative = reinterpret_cast<decltype(d.launch_cooperative)>(
      resolve(d, "cuLaunchCooperativeKernel", CU_GET_PROC_ADDRESS_DEFAULT));
  d.function = symbol<decltype(d.function)>(d.library, "fake_cuda_function");
  d.launch_count = symbol<decltype(d.launch_count)>(d.library, "fake_cuda_launch_count");
  d.launch_record = symbol<decltype(d.launch_record)>(d.library, "fake_cuda_launch");
  d.function_limit = symbol<decltype(d.function_limit)>(d.library, "fake_cuda_function_limit");
  d.set_function_limit = symbol<decltype(d.set_function_limit)>(d.library, "fake_cuda_set_function_limit");
  d.fail_above = symbol<decltype(d.fail_above)>(d.library, "fake_cuda_fail_launches_above");
  d.set_capturing = symbol<decltype(d.set_capturing)>(d.library, "fake_cuda_set_capturing");
  d.set_collective_running = symbol<decltype(d.set_collective_running)>(d.library, "fake_cuda_set_collective_running");
  d.set_stream_busy = symbol<decltype(d.set_stream_busy)>(d.library, "fake_cuda_set_stream_busy");
  d.event_create = reinterpret_cast<decltype(d.event_create)>(resolve(d, "cuEventCreate", 0));
  d.event_record = reinterpret_cast<decltype(d.event_record)>(resolve(d, "cuEventRecord", 0));
  d.event_record_with_flags =
      reinterpret_cast<decltype(d.event_record_with_flags)>(resolve(d, "cuEventRecordWithFlags", 0));
  d.stream_wait = reinterpret_cast<decltype(d.stream_wait)>(resolve(d, "cuStreamWaitEvent", 0));
  d.stream_wait_ptsz = reinterpret_cast<decltype(d.stream_wait_ptsz)>(
      resolve(d, "cuStreamWaitEvent", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM));
  d.own_address = symbol<decltype(d.own_address)>(d.library, "fake_cuda_own_address");
  d.capture_mode = symbol<decltype(d.capture_mode)>(d.library, "fake_cuda_capture_mode");
  return d;
}

json record_json(const FakeLaunchRecord& r, CUresult returned) {
  return {{"entry", r.entry},
          {"function", r.function},
          {"smem", r.shared_mem_bytes},
          {"threads", r.block_threads},
          {"has_priority", r.has_priority != 0},
          {"priority", r.priority},
          {"cooperative", r.cooperative != 0},
          {"cluster", r.cluster_size},
          {"attributes", r.attribute_count},
          {"driver_result", r.result},
          {"returned", static_cast<int>(returned)}};
}

// What the driver received during `action` (usually one launch; two for a retried one).
json step(const Driver& d, const std::function<CUresult()>& action) {
  const int before = d.launch_count();
  const CUresult returned = action();
  json launches = json::array();
  for (int i = before; i < d.launch_count(); ++i) launches.push_back(record_json(d.launch_record(i), returned));
  return launches;
}

CUresult plain_launch(const Driver& d, decltype(&cuLaunchKernel) entry, int function, unsigned threads, unsigned smem) {
  return entry(d.f(function), 132 * 8, 1, 1, threads, 1, 1, smem, nullptr, nullptr, nullptr);
}

CUresult ex_launch(const Driver& d, int function, unsigned threads, unsigned smem, CUlaunchAttribute* attrs,
                   unsigned count) {
  CUlaunchConfig c{};
  c.gridDimX = 132 * 8, c.gridDimY = 1, c.gridDimZ = 1;
  c.blockDimX = threads, c.blockDimY = 1, c.blockDimZ = 1;
  c.sharedMemBytes = smem;
  c.attrs = attrs;
  c.numAttrs = count;
  return d.launch_ex(&c, d.f(function), nullptr, nullptr);
}

json run_steps(const Driver& d) {
  json steps;
  // The lean collective CTA (512 threads, 32 registers, 16 KiB): shape:auto plans around it.
  constexpr unsigned kNcclThreads = 512, kNcclSmem = 16 * 1024;

  // Under the targeted form nothing is outstanding yet.
  d.set_collective_running(0);
  steps["compute_before_nccl"] = step(d, [&] { return plain_launch(d, d.launch, kFakeCompute, 256, 0); });
  d.set_collective_running(1);
  steps["nccl"] = step(d, [&] { return plain_launch(d, d.launch, kFakeNccl, kNcclThreads, kNcclSmem); });
  steps["compute"] = step(d, [&] { return plain_launch(d, d.launch, kFakeCompute, 256, 0); });
  // The same kernel again with dynamic shared memory of its own: a decision cached for the launch
  // before must not be reused.
  steps["compute_own_smem"] = step(d, [&] { return plain_launch(d, d.launch, kFakeCompute, 256, 4096); });
  steps["nccl_ex_with_attributes"] = step(d, [&] {
    CUlaunchAttribute attrs[2] = {};
    attrs[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[0].value.clusterDim.x = 4, attrs[0].value.clusterDim.y = 1, attrs[0].value.clusterDim.z = 1;
    attrs[1].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    attrs[1].value.priority = 0;
    return ex_launch(d, kFakeNccl, kNcclThreads, kNcclSmem, attrs, 2);
  });
  // More attributes than the interposer copies (30): it cannot add a priority, and leaves the launch
  // as it is.
  steps["nccl_ex_many_attributes"] = step(d, [&] {
    CUlaunchAttribute attrs[31] = {};
    for (auto& a : attrs) a.id = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN;  // value 0: the default domain
    return ex_launch(d, kFakeNccl, kNcclThreads, kNcclSmem, attrs, 31);
  });
  steps["compute_ex"] = step(d, [&] { return ex_launch(d, kFakeCompute, 256, 0, nullptr, 0); });
  steps["compute_cluster"] = step(d, [&] {
    CUlaunchAttribute cluster{};
    cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    cluster.value.clusterDim.x = 4, cluster.value.clusterDim.y = 1, cluster.value.clusterDim.z = 1;
    return ex_launch(d, kFakeCompute, 256, 0, &cluster, 1);
  });
  steps["compute_cooperative"] =
      step(d, [&] { return d.launch_cooperative(d.f(kFakeCompute), 132, 1, 1, 256, 1, 1, 0, nullptr, nullptr); });
  steps["compute_ptsz"] = step(d, [&] { return plain_launch(d, d.launch_ptsz, kFakeCompute, 256, 0); });
  steps["nccl_ptsz"] = step(d, [&] { return plain_launch(d, d.launch_ptsz, kFakeNccl, kNcclThreads, kNcclSmem); });
  steps["library_kernel"] = step(d, [&] { return plain_launch(d, d.launch, kFakeLibraryKernel, 256, 0); });
  steps["persistent"] = step(d, [&] { return plain_launch(d, d.launch, kFakePersistent, 256, 0); });
  // The program sets its own (default) limit again, as code calling cudaFuncSetAttribute before each
  // launch does.
  d.set_function_limit(kFakeCompute, 48 * 1024);
  steps["compute_after_limit_lowered"] = step(d, [&] { return plain_launch(d, d.launch, kFakeCompute, 256, 0); });
  d.fail_above(1000);
  steps["fragile_first"] = step(d, [&] { return plain_launch(d, d.launch, kFakeFragile, 256, 0); });
  steps["fragile_again"] = step(d, [&] { return plain_launch(d, d.launch, kFakeFragile, 256, 0); });
  d.fail_above(-1);
  // The first launch of a kernel, into a capturing stream: describing it and raising its limit must
  // not disturb the capture (the fake rejects non-relaxed calls meanwhile), and the thread's capture
  // mode must be the program's again afterwards.
  d.set_capturing(1);
  steps["captured"] = step(d, [&] { return plain_launch(d, d.launch, kFakeCaptured, 256, 0); });
  const int mode_after_capture = d.capture_mode();
  d.set_capturing(0);
  // cuGetProcAddress resolved through cuGetProcAddress, as cudart does.
  const auto nested = reinterpret_cast<decltype(&cuGetProcAddress_v2)>(resolve(d, "cuGetProcAddress", 0));
  void* nested_launch = nullptr;
  CUdriverProcAddressQueryResult status{};
  if (nested("cuLaunchKernel", &nested_launch, 12000, 0, &status) != CUDA_SUCCESS) fail("nested resolve failed");
  steps["compute_via_nested_resolver"] = step(d, [&] {
    return plain_launch(d, reinterpret_cast<decltype(&cuLaunchKernel)>(nested_launch), kFakeCompute, 256, 0);
  });
  // A direct call of the exported symbol, as a program linked against libcuda makes it. Such a
  // program has libcuda in its global scope: promote ours there (dlsym answers exactly as without
  // the interposer, so a libcuda loaded only RTLD_LOCAL is not found through RTLD_DEFAULT).
  dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
  const auto direct = reinterpret_cast<decltype(&cuLaunchKernel)>(dlsym(RTLD_DEFAULT, "cuLaunchKernel"));
  steps["direct_symbol"] =
      step(d, [&] { return direct ? plain_launch(d, direct, kFakeCompute, 256, 0) : CUDA_ERROR_NOT_FOUND; });
  steps["unknown_function"] = step(d, [&] {
    return d.launch(reinterpret_cast<CUfunction>(&steps), 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr);
  });

  // Many threads launching at once, the first launches of a new kernel racing each other.
  const int before = d.launch_count();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&d, t] {
      for (int i = 0; i < 500; ++i)
        plain_launch(d, (i + t) % 2 ? d.launch : d.launch_ptsz, (i + t) % 3 ? kFakeCompute : kFakeCaptured, 256, 0);
    });
  for (auto& t : threads) t.join();
  int padded = 0;
  for (int i = before; i < d.launch_count(); ++i) padded += d.launch_record(i).shared_mem_bytes > 0;

  json out;
  out["steps"] = steps;
  out["threaded"] = {{"launches", d.launch_count() - before}, {"padded", padded}};
  out["wrapped"] = {
      {"cuGetProcAddress_v2", reinterpret_cast<void*>(d.resolve) != d.own_address("cuGetProcAddress_v2")},
      {"cuLaunchKernel", reinterpret_cast<void*>(d.launch) != d.own_address("cuLaunchKernel")},
      {"cuLaunchKernel_ptsz", reinterpret_cast<void*>(d.launch_ptsz) != d.own_address("cuLaunchKernel_ptsz")},
      {"cuLaunchKernelEx", reinterpret_cast<void*>(d.launch_ex) != d.own_address("cuLaunchKernelEx")},
      {"cuGetProcAddress", reinterpret_cast<void*>(nested) != d.own_address("cuGetProcAddress_v2")},
      {"nested_cuLaunchKernel", nested_launch != d.own_address("cuLaunchKernel")},
      // Names the interposer does not hook come back exactly as the driver has them.
      {"cuFuncGetAttribute", dlsym(d.library, "cuFuncGetAttribute") != d.own_address("cuFuncGetAttribute")},
  };
  out["compute_limit"] = d.function_limit(kFakeCompute);
  out["library_function_limit"] = d.function_limit(kFakeLibraryFunction);
  out["library_kernel_level_limit"] =
      symbol<decltype(&fake_cuda_kernel_level_limit)>(d.library, "fake_cuda_kernel_level_limit")();
  out["direct_symbol_found"] = direct != nullptr;
  out["capture_mode_restored"] = mode_after_capture == CU_STREAM_CAPTURE_MODE_GLOBAL;
  return out;
}

// The targeted form of shape and sm-target (outstanding_collectives.h), step by step: a program with
// an NCCL stream, a compute stream and a side stream (fake handles), NCCL kernels that stay running
// until the test says they completed, events recorded on the NCCL stream and waited on by the compute
// stream, a cuBLAS handle whose stream is set before each GEMM, and a capture.
json run_stream_order(const Driver& d) {
  const auto nccl = reinterpret_cast<CUstream>(0x1000);
  const auto compute = reinterpret_cast<CUstream>(0x2000);
  const auto side = reinterpret_cast<CUstream>(0x3000);
  const auto launch_on = [&](CUstream stream, int function, unsigned threads) {
    return [&d, stream, function, threads] {
      return d.launch(d.f(function), 132 * 8, 1, 1, threads, 1, 1, 0, stream, nullptr, nullptr);
    };
  };
  cublasHandle_t handle = nullptr;
  if (cublasCreate_v2(&handle) != CUBLAS_STATUS_SUCCESS) fail("cublasCreate_v2");
  const auto gemm_target = [&](CUstream stream) {
    cublasSetStream_v2(handle, reinterpret_cast<cudaStream_t>(stream));
    int target = -1;
    cublasGetSmCountTarget(handle, &target);
    return target;
  };
  json steps, targets;
  targets["created"] = [&] {
    int target = -1;
    cublasGetSmCountTarget(handle, &target);
    return target;
  }();
  steps["before_any_nccl"] = step(d, launch_on(compute, kFakeCompute, 256));
  targets["before_any_nccl"] = gemm_target(compute);
  d.set_stream_busy(nccl, 1);
  steps["nccl"] = step(d, launch_on(nccl, kFakeNccl, 512));
  steps["beside_running_nccl"] = step(d, launch_on(compute, kFakeCompute, 256));
  targets["beside_running_nccl"] = gemm_target(compute);
  steps["on_the_nccl_stream"] = step(d, launch_on(nccl, kFakeCompute, 256));
  targets["on_the_nccl_stream"] = gemm_target(nccl);
  // work.wait(): the compute stream waits on an event recorded on the NCCL stream after the kernel.
  // An event the compute stream recorded before that wait follows no collective.
  CUevent done = nullptr, before_wait = nullptr, handoff = nullptr;
  for (CUevent* event : {&done, &before_wait, &handoff})
    if (d.event_create(event, 0) != CUDA_SUCCESS) fail("cuEventCreate");
  d.event_record(before_wait, compute);
  d.event_record(done, nccl);
  d.stream_wait(compute, done, 0);
  steps["after_waiting"] = step(d, launch_on(compute, kFakeCompute, 256));
  targets["after_waiting"] = gemm_target(compute);
  steps["side_stream_not_waiting"] = step(d, launch_on(side, kFakeCompute, 256));
  // The event re-recorded on a stream without NCCL kernels orders nothing after NCCL any more.
  d.event_record(done, side);
  d.stream_wait(side, done, 0);
  steps["side_after_unrelated_wait"] = step(d, launch_on(side, kFakeCompute, 256));
  // FSDP2's hand-off: the side stream waits on the compute stream, which waited on the collective.
  d.stream_wait(side, before_wait, 0);
  steps["side_after_compute_before_its_wait"] = step(d, launch_on(side, kFakeCompute, 256));
  d.event_record(handoff, compute);
  d.stream_wait(side, handoff, 0);
  steps["side_after_compute_handoff"] = step(d, launch_on(side, kFakeCompute, 256));
  // A second collective, issued after the wait: the compute stream is beside it again.
  steps["nccl_again"] = step(d, launch_on(nccl, kFakeNccl, 512));
  steps["beside_second_nccl"] = step(d, launch_on(compute, kFakeCompute, 256));
  // The per-thread default stream waits through the _ptsz entry point (stream 0 means its own stream).
  CUevent done_again = nullptr;
  if (d.event_create(&done_again, 0) != CUDA_SUCCESS) fail("cuEventCreate");
  d.event_record_with_flags(done_again, nccl, 0);
  d.stream_wait_ptsz(nullptr, done_again, 0);
  steps["per_thread_after_waiting"] =
      step(d, [&] { return d.launch_ptsz(d.f(kFakeCompute), 132 * 8, 1, 1, 256, 1, 1, 0, nullptr, nullptr, nullptr); });
  steps["legacy_stream_not_waiting"] = step(d, launch_on(nullptr, kFakeCompute, 256));
  // The collectives complete: nothing is beside anything.
  d.set_stream_busy(nccl, 0);
  steps["after_completion"] = step(d, launch_on(side, kFakeCompute, 256));
  targets["after_completion"] = gemm_target(side);
  // A captured launch is replayed later, when a collective may be running: shaped even now.
  d.set_capturing(1);
  steps["captured_with_nothing_running"] = step(d, launch_on(compute, kFakeCaptured, 256));
  d.set_capturing(0);
  cublasDestroy_v2(handle);
  return {{"steps", steps}, {"gemm_targets", targets}};
}

// cuBLAS through a direct (PLT) call; cuBLASLt through dlopen + dlsym, as a framework loading it
// lazily would.
json run_blas() {
  json out;
  cublasHandle_t handle = nullptr;
  if (cublasCreate_v2(&handle) != CUBLAS_STATUS_SUCCESS) fail("cublasCreate_v2");
  int target = -1;
  cublasGetSmCountTarget(handle, &target);
  out["cublas_sm_target"] = target;
  cublasDestroy_v2(handle);

  void* lt = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!lt) fail(std::string("dlopen libcublasLt.so.13: ") + dlerror());
  const auto create = symbol<decltype(&cublasLtMatmulDescCreate)>(lt, "cublasLtMatmulDescCreate");
  const auto get = symbol<decltype(&cublasLtMatmulDescGetAttribute)>(lt, "cublasLtMatmulDescGetAttribute");
  const auto destroy = symbol<decltype(&cublasLtMatmulDescDestroy)>(lt, "cublasLtMatmulDescDestroy");
  cublasLtMatmulDesc_t desc = nullptr;
  if (create(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) fail("cublasLtMatmulDescCreate");
  int32_t lt_target = -1;
  size_t written = 0;
  get(desc, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &lt_target, sizeof lt_target, &written);
  destroy(desc);
  out["cublaslt_sm_target"] = lt_target;
  return out;
}

}  // namespace

int main() {
  const Driver d = open_driver();
  // FAKE_CLIENT_SCENARIO=stream-order plays the targeted compute controls' program instead.
  const char* scenario = std::getenv("FAKE_CLIENT_SCENARIO");
  if (scenario && std::string(scenario) == "stream-order") {
    std::printf("%s\n", run_stream_order(d).dump().c_str());
    return 0;
  }
  json out = run_steps(d);
  out["blas"] = run_blas();
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
