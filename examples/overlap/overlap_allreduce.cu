// A program written without tandem: each GPU runs compute kernels on one stream and an NCCL
// all-reduce on another, the way a training step overlaps gradients with computation. It is the
// "unmodified program" that `tandem run` is measured on (docs/PERFORMANCE.md):
//
//   overlap_allreduce [--workload stream|gemm] [--kernels N] [--bytes BYTES] [--iters N]
//   tandem run --policy shape:3+priority -- overlap_allreduce --workload stream
//   NCCL_COMM_ID=127.0.0.1:29600 mpirun -np 2 -x NCCL_COMM_ID overlap_allreduce   # one rank per process
//
// One process drives every visible GPU; or, started as one process per rank (RANK and WORLD_SIZE, or
// Open MPI's OMPI_COMM_WORLD_RANK and _SIZE, with NCCL_COMM_ID naming where rank 0's NCCL bootstrap
// listens), each process drives one GPU (LOCAL_RANK modulo the visible GPUs; several ranks may share
// one when each has its own NCCL_HOSTID). Prints the median step time (slowest GPU) and the
// all-reduce's result as JSON, one line per process.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

// Exits naming the call and the library's message when a CUDA, NCCL or cuBLAS call fails.
#define CHECK(x, ok, message)                                                           \
  do {                                                                                  \
    const auto status_ = (x);                                                           \
    if (status_ != ok) {                                                                \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, message(status_)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)
#define CHECK_CUDA(x) CHECK(x, cudaSuccess, cudaGetErrorString)
#define CHECK_NCCL(x) CHECK(x, ncclSuccess, ncclGetErrorString)
#define CHECK_CUBLAS(x) CHECK(x, CUBLAS_STATUS_SUCCESS, cublasGetStatusString)

// STREAM triad over 16-byte vectors, two per thread: many short blocks, 8 resident per SM.
__global__ void __launch_bounds__(256) triad(float4* a, const float4* b, const float4* c, size_t n) {
  const size_t first = blockIdx.x * size_t(512) + threadIdx.x;
  for (int v = 0; v < 2; ++v) {
    const size_t i = first + size_t(v) * 256;
    if (i >= n) return;
    const float4 x = b[i], y = c[i];
    a[i] = make_float4(x.x + 3.f * y.x, x.y + 3.f * y.y, x.z + 3.f * y.z, x.w + 3.f * y.w);
  }
}

__global__ void fill(float* p, size_t n, float scale) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = scale * float((i * 2654435761u) % 1000) / 1000.f;
}
__global__ void fill_bf16(__nv_bfloat16* p, size_t n, float value) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16(value);
}

// The rank and world size a launcher gave this process (RANK/WORLD_SIZE, Open MPI's), world 1 if none.
struct Launch {
  int rank = 0, world = 1, local_rank = 0;
};
int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}
Launch launch_from_env() {
  const bool ompi = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
  return {env_int(ompi ? "OMPI_COMM_WORLD_RANK" : "RANK", 0), env_int(ompi ? "OMPI_COMM_WORLD_SIZE" : "WORLD_SIZE", 1),
          env_int(ompi ? "OMPI_COMM_WORLD_LOCAL_RANK" : "LOCAL_RANK", 0)};
}

// The value every element holds after `reductions` in-place sums over `n` ranks, rank (or GPU) r
// starting from r + 1: the first sum gives n(n+1)/2, each later one n times the value, rounded to
// bf16. NCCL's ring adds the equal values one at a time, rounding each partial sum to bf16; a sum
// accumulated in fp32 rounds once. Either is a correct all-reduce: both values are accepted (for
// n <= 4 and these values they coincide).
void expected_values(int n, int reductions, float* ring, float* once) {
  float r = __bfloat162float(__float2bfloat16(float(n) * float(n + 1) / 2.f)), o = r;
  for (int k = 1; k < reductions; ++k) {
    float partial = r;
    for (int j = 1; j < n; ++j) partial = __bfloat162float(__float2bfloat16(partial + r));
    r = partial;
    o = __bfloat162float(__float2bfloat16(float(n) * o));
  }
  *ring = r;
  *once = o;
}

struct Gpu {
  cudaStream_t compute, comm;
  cudaEvent_t start, comm_done, end;
  float *a, *b, *c;             // stream arrays
  __nv_bfloat16 *ga, *gb, *gc;  // GEMM operands
  cublasHandle_t cublas;
  __nv_bfloat16* grad;  // all-reduce buffer
};

int main(int argc, char** argv) {
  std::string workload = "stream";
  int kernels = 10, iters = 30, warmup = 5;
  size_t bytes = 512ull << 20, stream_bytes = 256ull << 20;
  int gemm_n = 8192;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::string(argv[++i]);
    };
    if (a == "--workload")
      workload = next();
    else if (a == "--kernels")
      kernels = std::stoi(next());
    else if (a == "--bytes")
      bytes = std::stoull(next());
    else if (a == "--iters")
      iters = std::stoi(next());
    else {
      std::fprintf(stderr, "usage: %s [--workload stream|gemm] [--kernels N] [--bytes B] [--iters N]\n", argv[0]);
      return 2;
    }
  }
  if (workload != "stream" && workload != "gemm") {
    std::fprintf(stderr, "unknown workload %s\n", workload.c_str());
    return 2;
  }
  int visible = 0;
  CHECK_CUDA(cudaGetDeviceCount(&visible));
  const Launch launch = launch_from_env();
  // devices[i]: the GPU of this process's i-th communicator; ranks: the communicators' size.
  std::vector<int> devices;
  int ranks = visible;
  std::vector<ncclComm_t> comms;
  if (launch.world > 1) {
    if (!std::getenv("NCCL_COMM_ID")) {
      std::fprintf(stderr, "one process per rank (world size %d) needs NCCL_COMM_ID=HOST:PORT for NCCL's bootstrap\n",
                   launch.world);
      return 2;
    }
    devices = {launch.local_rank % visible};
    ranks = launch.world;
    CHECK_CUDA(cudaSetDevice(devices[0]));
    ncclUniqueId id;  // with NCCL_COMM_ID set every rank gets the same id, naming rank 0's listener
    CHECK_NCCL(ncclGetUniqueId(&id));
    comms.resize(1);
    CHECK_NCCL(ncclCommInitRank(&comms[0], launch.world, id, launch.rank));
  } else {
    for (int d = 0; d < visible; ++d) devices.push_back(d);
    comms.resize(visible);
    CHECK_NCCL(ncclCommInitAll(comms.data(), visible, nullptr));
  }
  const int ngpus = int(devices.size());
  std::vector<Gpu> gpus(ngpus);
  const size_t vec = stream_bytes / 16, floats = stream_bytes / 4, count = bytes / 2;
  const size_t gemm_elems = size_t(gemm_n) * gemm_n;
  for (int d = 0; d < ngpus; ++d) {
    Gpu& g = gpus[d];
    CHECK_CUDA(cudaSetDevice(devices[d]));
    CHECK_CUDA(cudaStreamCreateWithFlags(&g.compute, cudaStreamNonBlocking));
    CHECK_CUDA(cudaStreamCreateWithFlags(&g.comm, cudaStreamNonBlocking));
    for (cudaEvent_t* e : {&g.start, &g.comm_done, &g.end}) CHECK_CUDA(cudaEventCreate(e));
    CHECK_CUDA(cudaMalloc(&g.grad, count * 2));
    // Rank r (GPU d in the one-process mode) starts from r + 1.
    fill_bf16<<<1024, 256>>>(g.grad, count, float((launch.world > 1 ? launch.rank : d) + 1));
    if (workload == "stream") {
      for (float** p : {&g.a, &g.b, &g.c}) CHECK_CUDA(cudaMalloc(p, stream_bytes));
      fill<<<1024, 256>>>(g.b, floats, 1.f);
      fill<<<1024, 256>>>(g.c, floats, 2.f);
    } else {
      for (__nv_bfloat16** p : {&g.ga, &g.gb, &g.gc}) CHECK_CUDA(cudaMalloc(p, gemm_elems * 2));
      fill_bf16<<<1024, 256>>>(g.ga, gemm_elems, 0.01f);
      fill_bf16<<<1024, 256>>>(g.gb, gemm_elems, 0.02f);
      CHECK_CUBLAS(cublasCreate(&g.cublas));
      CHECK_CUBLAS(cublasSetStream(g.cublas, g.compute));
    }
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
  }

  std::vector<double> steps;
  for (int it = 0; it < warmup + iters; ++it) {
    for (int d = 0; d < ngpus; ++d) {
      Gpu& g = gpus[d];
      CHECK_CUDA(cudaSetDevice(devices[d]));
      CHECK_CUDA(cudaEventRecord(g.start, g.compute));
      CHECK_CUDA(cudaStreamWaitEvent(g.comm, g.start, 0));
      for (int k = 0; k < kernels; ++k) {
        if (workload == "stream") {
          triad<<<unsigned((vec + 511) / 512), 256, 0, g.compute>>>(reinterpret_cast<float4*>(g.a),
                                                                    reinterpret_cast<const float4*>(g.b),
                                                                    reinterpret_cast<const float4*>(g.c), vec);
          CHECK_CUDA(cudaGetLastError());
        } else {
          const float alpha = 1.f, beta = 0.f;
          CHECK_CUBLAS(cublasGemmEx(g.cublas, CUBLAS_OP_N, CUBLAS_OP_N, gemm_n, gemm_n, gemm_n, &alpha, g.ga,
                                    CUDA_R_16BF, gemm_n, g.gb, CUDA_R_16BF, gemm_n, &beta, g.gc, CUDA_R_16BF, gemm_n,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        }
      }
    }
    // The gradient all-reduce, enqueued after the compute as a framework would.
    CHECK_NCCL(ncclGroupStart());
    for (int d = 0; d < ngpus; ++d)
      CHECK_NCCL(ncclAllReduce(gpus[d].grad, gpus[d].grad, count, ncclBfloat16, ncclSum, comms[d], gpus[d].comm));
    CHECK_NCCL(ncclGroupEnd());
    double slowest = 0;
    for (int d = 0; d < ngpus; ++d) {
      Gpu& g = gpus[d];
      CHECK_CUDA(cudaSetDevice(devices[d]));
      CHECK_CUDA(cudaEventRecord(g.comm_done, g.comm));
      CHECK_CUDA(cudaStreamWaitEvent(g.compute, g.comm_done, 0));
      CHECK_CUDA(cudaEventRecord(g.end, g.compute));
    }
    for (int d = 0; d < ngpus; ++d) {
      CHECK_CUDA(cudaEventSynchronize(gpus[d].end));
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, gpus[d].start, gpus[d].end));
      slowest = std::max(slowest, double(ms));
    }
    if (it >= warmup) steps.push_back(slowest);
  }
  std::sort(steps.begin(), steps.end());
  // Every element of every buffer must hold the expected sum after the warmup + iters in-place
  // all-reduces (expected_values).
  float ring = 0, once = 0;
  expected_values(ranks, warmup + iters, &ring, &once);
  size_t wrong = 0;
  std::vector<__nv_bfloat16> host(count);
  for (int d = 0; d < ngpus; ++d) {
    CHECK_CUDA(cudaSetDevice(devices[d]));
    CHECK_CUDA(cudaMemcpy(host.data(), gpus[d].grad, count * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count; ++i) {
      const float v = __bfloat162float(host[i]);
      wrong += v != ring && v != once;
    }
  }
  const float value = __bfloat162float(host[0]);
  std::printf(
      "{\"workload\": \"%s\", \"gpus\": %d, \"rank\": %d, \"world_size\": %d, \"kernels\": %d, "
      "\"bytes\": %zu, \"iters\": %d, \"median_ms\": %.4f, \"min_ms\": %.4f, \"max_ms\": %.4f, "
      "\"value\": %.9g, \"expected\": %.9g, \"wrong\": %zu, \"ok\": %s}\n",
      workload.c_str(), ngpus, launch.world > 1 ? launch.rank : 0, ranks, kernels, bytes, iters,
      steps[steps.size() / 2], steps.front(), steps.back(), value, ring, wrong, wrong ? "false" : "true");
  std::fflush(stdout);
  if (wrong)
    std::fprintf(stderr, "all-reduce result: %zu wrong elements (element 0 is %g, expected %g)\n", wrong, value, ring);
  for (auto c : comms) ncclCommDestroy(c);
  return wrong ? 1 : 0;
}
