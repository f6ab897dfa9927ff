// A program whose overlap is known by construction, for `tandem run --timeline`
// (tests/gpu/test_timeline_gpu.cpp, scripts/gpu-check.sh section timeline). Each step is an NVTX range
// "step <kind>" and ends with a synchronisation:
//
//   serial      computation A (2 ms) on stream 1, then communication B (1 ms) on stream 2 after A
//   concurrent  A (3 ms) on stream 1 and B (1 ms) on stream 2 at once
//   partial     A1 (1 ms) then A2 (1 ms) on stream 1; B (1.5 ms) on stream 2 after A1
//
// A and B are spin kernels of one block each (they run side by side on two SMs) that hold their SM
// for a given time on the GPU's global timer. B is named like an NCCL kernel (ncclDevKernel_...),
// which is what makes tandem count it as communication; A is computation. The truth is measured,
// not assumed: CUDA events recorded right before and right after each kernel on its own stream give
// each kernel's interval, and the program prints, per step, the computation busy, communication busy
// and overlapped times they make, as one JSON line:
//
//   {"steps": [{"kind": "serial", "computation_ms": ..., "communication_ms": ..., "overlapped_ms": ...}, ...]}
//
//   timeline_program [--repeat N] [--scale X]   N rounds of the three kinds (default 3); X scales every
//                                               duration (default 1)
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

#define CHECK(call)                                                                            \
  do {                                                                                         \
    const cudaError_t e = (call);                                                              \
    if (e != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "timeline_program: %s failed: %s\n", #call, cudaGetErrorString(e)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Thread 0 spins until `ns` have passed on the global timer; the block holds its SM meanwhile.
__device__ void spin(unsigned long long ns, int* sink) {
  if (threadIdx.x != 0) return;
  const unsigned long long start = global_ns();
  int n = 0;
  while (global_ns() - start < ns) ++n;
  if (n == -1) *sink = n;  // never: keeps the loop
}

__global__ void timeline_compute_spin(unsigned long long ns, int* sink) { spin(ns, sink); }

}  // namespace

// extern "C": its name is exactly this, as NCCL's kernels' names begin.
extern "C" __global__ void ncclDevKernel_TandemTimelineSpin(unsigned long long ns, int* sink) { spin(ns, sink); }

namespace {

struct Interval {
  float start = 0, end = 0;  // ms from the step's origin event
};

struct Timed {
  cudaEvent_t before{}, after{};
  Interval read(cudaEvent_t origin) const {
    Interval i;
    CHECK(cudaEventElapsedTime(&i.start, origin, before));
    CHECK(cudaEventElapsedTime(&i.end, origin, after));
    return i;
  }
};

double union_ms(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  double total = 0, start = 0, end = -1;
  for (const Interval& i : v) {
    if (i.start > end) {
      if (end > start) total += end - start;
      start = i.start;
      end = i.end;
    } else {
      end = std::max<double>(end, i.end);
    }
  }
  if (end > start) total += end - start;
  return total;
}

double overlap_ms(const std::vector<Interval>& a, const Interval& b) {
  // A's intervals do not overlap each other (one stream).
  double total = 0;
  for (const Interval& i : a)
    total += std::max(0.0, std::min<double>(i.end, b.end) - std::max<double>(i.start, b.start));
  return total;
}

struct Program {
  cudaStream_t s1{}, s2{};
  cudaEvent_t origin{}, dependency{};
  int* sink = nullptr;
  double scale = 1;

  Program() {
    CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&origin));
    CHECK(cudaEventCreateWithFlags(&dependency, cudaEventDisableTiming));
    CHECK(cudaMalloc(&sink, sizeof(int)));
  }

  unsigned long long ns(double ms) const { return static_cast<unsigned long long>(ms * scale * 1e6); }

  Timed launch(bool communication, double ms, cudaStream_t s) {
    Timed t;
    CHECK(cudaEventCreate(&t.before));
    CHECK(cudaEventCreate(&t.after));
    CHECK(cudaEventRecord(t.before, s));
    if (communication)
      ncclDevKernel_TandemTimelineSpin<<<1, 32, 0, s>>>(ns(ms), sink);
    else
      timeline_compute_spin<<<1, 32, 0, s>>>(ns(ms), sink);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(t.after, s));
    return t;
  }

  // s2 continues after everything issued on s1 so far.
  void s2_after_s1() {
    CHECK(cudaEventRecord(dependency, s1));
    CHECK(cudaStreamWaitEvent(s2, dependency, 0));
  }

  std::string step(const std::string& kind) {
    // The warm-up is no step: its range does not match 'step*'.
    nvtxRangePushA((kind == "warmup" ? std::string("warmup") : "step " + kind).c_str());
    CHECK(cudaEventRecord(origin, s1));
    CHECK(cudaStreamWaitEvent(s2, origin, 0));
    std::vector<Timed> computation;
    Timed communication;
    if (kind == "serial") {
      computation.push_back(launch(false, 2, s1));
      s2_after_s1();
      communication = launch(true, 1, s2);
    } else if (kind == "concurrent") {
      computation.push_back(launch(false, 3, s1));
      communication = launch(true, 1, s2);
    } else {
      computation.push_back(launch(false, 1, s1));
      s2_after_s1();
      communication = launch(true, 1.5, s2);
      computation.push_back(launch(false, 1, s1));
    }
    CHECK(cudaDeviceSynchronize());
    nvtxRangePop();
    std::vector<Interval> comp;
    for (const Timed& t : computation) comp.push_back(t.read(origin));
    const Interval comm = communication.read(origin);
    char line[256];
    std::snprintf(line, sizeof line,
                  "{\"kind\": \"%s\", \"computation_ms\": %.4f, \"communication_ms\": %.4f, \"overlapped_ms\": %.4f}",
                  kind.c_str(), union_ms(comp), comm.end - comm.start, overlap_ms(comp, comm));
    for (Timed& t : computation) {
      CHECK(cudaEventDestroy(t.before));
      CHECK(cudaEventDestroy(t.after));
    }
    CHECK(cudaEventDestroy(communication.before));
    CHECK(cudaEventDestroy(communication.after));
    return line;
  }
};

}  // namespace

int main(int argc, char** argv) {
  int repeat = 3;
  double scale = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--repeat" && i + 1 < argc)
      repeat = std::atoi(argv[++i]);
    else if (a == "--scale" && i + 1 < argc)
      scale = std::atof(argv[++i]);
    else {
      std::fprintf(stderr, "usage: timeline_program [--repeat N] [--scale X]\n");
      return 2;
    }
  }
  if (repeat < 1 || scale <= 0) {
    std::fprintf(stderr, "timeline_program: --repeat must be at least 1 and --scale positive\n");
    return 2;
  }
  Program p;
  p.scale = scale;
  // Warm-up outside any step: module loading and first launches.
  (void)p.step("warmup");
  std::string out = "{\"steps\": [";
  for (int r = 0; r < repeat; ++r) {
    for (const char* kind : {"serial", "concurrent", "partial"}) {
      out += (out.back() == '[' ? "" : ", ") + p.step(kind);
    }
  }
  std::printf("%s]}\n", out.c_str());
  return 0;
}
