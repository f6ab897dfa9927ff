// A stand-in for a CUDA program with NVTX steps and, in some modes, its own CUPTI profiler, run on
// the fake driver (fake_cuda.h) and the fake CUPTI (fake_cupti.h) by tests/cpu/test_preload_timeline.cpp
// under `tandem run --timeline`. It launches one kernel through the driver (the interposer's first
// CUDA activity), marks its steps with NVTX's own header-only library (which finds its injection
// through NVTX_INJECTION64_PATH as in any program), and plays the GPU: each record it queues inside a
// step is issued there, and its GPU times are the truth the test checks tandem's figures against.
//
//   fake_cupti_client overlap [slow]   three steps "step": serial, concurrent, partial (below)
//   fake_cupti_client profiler         a step, then the program's own profiler takes CUPTI
//   fake_cupti_client profiler-first   the program's profiler takes CUPTI before any launch
//   fake_cupti_client tuned            one step whose overlap depends on TANDEM_POLICY (tandem tune)
//   fake_cupti_client shaped           one kernel launched plain and cooperative (never shaped), its
//                                      records with the sizes the launches got (the shaping check)
//   fake_cupti_client MODE ... _exit   any mode, leaving through _exit (as Python's os._exit) at the end
//   fake_cupti_client MODE ... vfork   any mode, then a vfork child that leaves through _exit at once
//   fake_cupti_client wide             one step named in wide characters, L"ステップ" (nvtxRangePushW)
//   fake_cupti_client helper           overlap's three steps, then a helper: itself as `overlap slow`,
//                                      forked, executed and waited for (a CUDA helper of the program)
//
// Prints one JSON object: what the program's own profiler received, and what the fake saw.
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/wait.h>
#include <unistd.h>
#undef cuGetProcAddress

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../fake_cuda/fake_cuda.h"
#include "fake_cupti.h"

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fake_cupti_client: %s\n", what.c_str());
  std::exit(2);
}

// One launch through the driver, as the CUDA runtime reaches it.
void launch_once() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) fail(std::string("dlopen libcuda.so.1: ") + dlerror());
  const auto resolve = reinterpret_cast<decltype(&cuGetProcAddress_v2)>(dlsym(library, "cuGetProcAddress_v2"));
  const auto function = reinterpret_cast<decltype(&fake_cuda_function)>(dlsym(library, "fake_cuda_function"));
  if (!resolve || !function) fail("the fake driver lacks its entry points");
  void* launch = nullptr;
  CUdriverProcAddressQueryResult status{};
  if (resolve("cuLaunchKernel", &launch, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS || !launch)
    fail("cannot resolve cuLaunchKernel");
  const CUresult result = reinterpret_cast<decltype(&cuLaunchKernel)>(launch)(
      reinterpret_cast<CUfunction>(function(kFakeCompute)), 1, 1, 1, 256, 1, 1, 0, nullptr, nullptr, nullptr);
  if (result != CUDA_SUCCESS) fail("the launch failed");
}

constexpr uint64_t kBase = 1000000000;  // the clock's origin, in ns
constexpr uint64_t kUs = 1000;          // the times below are in microseconds
constexpr const char* kCompute = "_Z4gemmPfS_";
constexpr const char* kNccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";

// (in microseconds; a step's window runs from its first record's start to the next step's first
// record's start, the last one's to its last record's end)
// Step 0, serial:     computation [0,400), communication [400,700)       -> exposed 300, idle 300
// Step 1, concurrent: computation [1000,1600), communication [1100,1400) -> overlapped 300, idle 400
// Step 2, partial:    computation [2000,2500), communication [2400,2800) -> overlapped 100, exposed 300
// "slow": step 2 also computes [3300,3500) (window 1500 long, 500 idle). A "step" range nested in step
// 0, another inside a "phase" inside it, and a "warmup" range count for nothing; so does a kernel
// issued after the last step, [3600,3700).
void play_three_steps(bool slow) {
  nvtxRangePushA("warmup");
  nvtxRangePop();
  nvtxRangePushA("step");
  nvtxRangePushA("step");
  nvtxRangePop();
  nvtxRangePushA("phase");  // step > phase > step: the inner one is no step either
  nvtxRangePushA("step");
  nvtxRangePop();
  nvtxRangePop();
  fake_cupti_kernel(kCompute, kBase + 0 * kUs, kBase + 400 * kUs, 0, 7);
  fake_cupti_kernel(kNccl, kBase + 400 * kUs, kBase + 700 * kUs, 0, 13);
  nvtxRangePop();
  // A step in a domain of its own, with a registered name: the same as a plain push.
  const nvtxDomainHandle_t domain = nvtxDomainCreateA("training");
  nvtxEventAttributes_t step{};
  step.version = NVTX_VERSION;
  step.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  step.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  step.message.registered = nvtxDomainRegisterStringA(domain, "step");
  nvtxDomainRangePushEx(domain, &step);
  fake_cupti_kernel(kCompute, kBase + 1000 * kUs, kBase + 1600 * kUs, 0, 7);
  fake_cupti_kernel(kNccl, kBase + 1100 * kUs, kBase + 1400 * kUs, 0, 13);
  nvtxDomainRangePop(domain);
  // A start/end range, as another thread could end it.
  const nvtxRangeId_t last = nvtxRangeStartA("step");
  fake_cupti_kernel(kCompute, kBase + 2000 * kUs, kBase + 2500 * kUs, 0, 7);
  fake_cupti_kernel(kNccl, kBase + 2400 * kUs, kBase + 2800 * kUs, 0, 13);
  if (slow) fake_cupti_kernel(kCompute, kBase + 3300 * kUs, kBase + 3500 * kUs, 0, 7);
  nvtxRangeEnd(last);
  fake_cupti_kernel(kCompute, kBase + 3600 * kUs, kBase + 3700 * kUs, 0, 7);
}

// One step, computation [0,600): communication after it under no policy (exposed 300), beside it under
// any policy with `priority` (exposed 0), half beside it under the others (exposed 150).
void play_tuned_step() {
  const char* policy = std::getenv("TANDEM_POLICY");
  const std::string p = policy ? policy : "";
  const uint64_t comm_start = p.find("priority") != std::string::npos ? 100
                              : p.empty() || p == "concurrent"        ? 600
                                                                      : 450;
  fake_cupti_kernel(kCompute, kBase + 0 * kUs, kBase + 600 * kUs, 0, 7);
  fake_cupti_kernel(kNccl, kBase + comm_start * kUs, kBase + (comm_start + 300) * kUs, 0, 13);
}

// Under a shape policy: the first launch (launch_once) is shaped when the policy shapes it, a
// cooperative launch of the same kernel never is. Each runs with the dynamic shared memory the driver
// got (the fake driver's record of the launch), as CUPTI would report it. In microseconds:
//   first launch       [0,400)    beside communication [200,700) for 200
//   cooperative launch [600,800)  beside it for 100
//   first kernel again [900,950)  (a replay of the first launch's size) beside nothing
void play_shaped_and_natural() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  const auto resolve = reinterpret_cast<decltype(&cuGetProcAddress_v2)>(dlsym(library, "cuGetProcAddress_v2"));
  const auto function = reinterpret_cast<decltype(&fake_cuda_function)>(dlsym(library, "fake_cuda_function"));
  const auto launches = reinterpret_cast<decltype(&fake_cuda_launch_count)>(dlsym(library, "fake_cuda_launch_count"));
  const auto launch_record = reinterpret_cast<decltype(&fake_cuda_launch)>(dlsym(library, "fake_cuda_launch"));
  if (!resolve || !function || !launches || !launch_record) fail("the fake driver lacks its entry points");
  void* cooperative = nullptr;
  CUdriverProcAddressQueryResult status{};
  if (resolve("cuLaunchCooperativeKernel", &cooperative, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS ||
      !cooperative)
    fail("cannot resolve cuLaunchCooperativeKernel");
  if (reinterpret_cast<decltype(&cuLaunchCooperativeKernel)>(cooperative)(
          reinterpret_cast<CUfunction>(function(kFakeCompute)), 1, 1, 1, 256, 1, 1, 0, nullptr, nullptr) !=
      CUDA_SUCCESS)
    fail("the cooperative launch failed");
  const int n = launches();
  if (n < 2) fail("the fake driver recorded fewer than two launches");
  const uint32_t first = launch_record(n - 2).shared_mem_bytes, second = launch_record(n - 1).shared_mem_bytes;
  constexpr const char* kFill = "_Z12fill_computePjmj";
  fake_cupti_kernel_with_smem(kFill, kBase + 0 * kUs, kBase + 400 * kUs, 0, 7, first);
  fake_cupti_kernel(kNccl, kBase + 200 * kUs, kBase + 700 * kUs, 0, 13);
  fake_cupti_kernel_with_smem(kFill, kBase + 600 * kUs, kBase + 800 * kUs, 0, 7, second);
  fake_cupti_kernel_with_smem(kFill, kBase + 900 * kUs, kBase + 950 * kUs, 0, 7, first);
  std::printf("launched with %u and %u B of dynamic shared memory\n", first, second);
}

// The program's own profiler, as Kineto does it.
int g_program_records = 0;
void CUPTIAPI program_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 1 << 16;
  *buffer = static_cast<uint8_t*>(std::malloc(*size));
  *max_records = 0;
}
void CUPTIAPI program_buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) ++g_program_records;
  std::free(buffer);
}
int start_program_profiler() {
  const CUptiResult result = cuptiActivityRegisterCallbacks(&program_buffer_requested, &program_buffer_completed);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  return static_cast<int>(result);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  int profiler_result = -1;
  if (mode == "profiler-first") profiler_result = start_program_profiler();
  launch_once();
  const char* injection = std::getenv("NVTX_INJECTION64_PATH");
  const int nvtx = injection && *injection ? 1 : 0;
  if (mode == "overlap") {
    fake_cupti_set_dropped(2);
    play_three_steps(argc > 2 && std::strcmp(argv[2], "slow") == 0);
  } else if (mode == "profiler") {
    nvtxRangePushA("step");
    fake_cupti_kernel(kCompute, kBase + 0 * kUs, kBase + 400 * kUs, 0, 7);
    fake_cupti_kernel(kNccl, kBase + 200 * kUs, kBase + 700 * kUs, 0, 13);
    nvtxRangePop();
    profiler_result = start_program_profiler();
  } else if (mode == "tuned") {
    play_tuned_step();
  } else if (mode == "shaped") {
    play_shaped_and_natural();
  } else if (mode == "helper") {
    play_three_steps(false);
    const pid_t child = fork();
    if (child == 0) {
      std::freopen("/dev/null", "w", stdout);
      execl(argv[0], argv[0], "overlap", "slow", static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      fail("the helper failed");
  } else if (mode == "wide") {
    nvtxRangePushW(L"\u30b9\u30c6\u30c3\u30d7");  // ステップ
    fake_cupti_kernel(kCompute, kBase + 0 * kUs, kBase + 400 * kUs, 0, 7);
    nvtxRangePop();
  } else if (mode == "profiler-first") {
    nvtxRangePushA("step");  // NVTX's first call: the interposer's injection, the timeline stepped aside
    nvtxRangePop();
  } else {
    fail("unknown mode '" + mode + "'");
  }
  // What runs under the program's profiler, if any: two kernels, flushed to it.
  const bool profiling = profiler_result >= 0;
  if (profiling) {
    fake_cupti_kernel(kCompute, kBase + 5000 * kUs, kBase + 5100 * kUs, 0, 7);
    fake_cupti_kernel(kNccl, kBase + 5100 * kUs, kBase + 5200 * kUs, 0, 13);
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
  if (std::strcmp(argv[argc - 1], "vfork") == 0) {
    // The child shares this process's memory until it leaves: what it does there is this process's.
    const pid_t child = vfork();
    if (child == 0) _exit(0);
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child) fail("vfork failed");
  }
  std::printf(
      "{\"nvtx_injection\": %d, \"profiler_result\": %d, \"program_records\": %d, \"registrations\": %d, "
      "\"marker_enabled\": %d, \"kernel_enabled\": %d, \"api_records_enabled\": %d, \"nvtx_inits\": %d}\n",
      nvtx, profiler_result, g_program_records, fake_cupti_registrations(),
      fake_cupti_enabled(CUPTI_ACTIVITY_KIND_MARKER), fake_cupti_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
      fake_cupti_api_records_enabled(), fake_cupti_nvtx_inits());
  if (std::strcmp(argv[argc - 1], "_exit") == 0) {
    std::fflush(stdout);
    _exit(0);  // no exit handler, no library destructor runs
  }
  return 0;
}
