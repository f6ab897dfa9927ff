#include "harness/copy_engine_reduction.h"

#include <cstdint>

#include "harness/values.cuh"
#include "tandem/cuda_check.h"
#include "tandem/error.h"

namespace tandem::bench {
namespace {

// out[i] = sum over j < nranks of chunks[j * count + i], accumulated in fp32. The sum runs on the
// SMs while the GEMMs beside it want them, so it moves 16 bytes a load: a memory-bound kernel that
// issues 8x fewer instructions per byte than scalar bf16 loads holds its SMs for less time.
template <class T>
__global__ void sum_chunks_vector_kernel(const T* chunks, T* out, size_t count, size_t vectors, int nranks) {
  constexpr int kPerVector = sizeof(uint4) / sizeof(T);
  for (size_t v = blockIdx.x * size_t(blockDim.x) + threadIdx.x; v < vectors; v += size_t(gridDim.x) * blockDim.x) {
    float sum[kPerVector] = {};
    for (int j = 0; j < nranks; ++j) {
      const uint4 loaded = reinterpret_cast<const uint4*>(chunks + size_t(j) * count)[v];
      const T* elements = reinterpret_cast<const T*>(&loaded);
      for (int k = 0; k < kPerVector; ++k) sum[k] += to_float(elements[k]);
    }
    uint4 stored;
    T* elements = reinterpret_cast<T*>(&stored);
    for (int k = 0; k < kPerVector; ++k) elements[k] = from_float<T>(sum[k]);
    reinterpret_cast<uint4*>(out)[v] = stored;
  }
}

// The same, an element at a time: for counts whose chunks are not 16-byte aligned.
template <class T>
__global__ void sum_chunks_kernel(const T* chunks, T* out, size_t count, int nranks) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    float sum = 0;
    for (int j = 0; j < nranks; ++j) sum += to_float(chunks[size_t(j) * count + i]);
    out[i] = from_float<T>(sum);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % sizeof(uint4) == 0; }

void sum_chunks(const void* chunks, void* out, size_t count, DType dtype, int nranks, cudaStream_t stream) {
  const size_t bytes = count * dtype_size(dtype);
  const bool vector = bytes % sizeof(uint4) == 0 && aligned16(chunks) && aligned16(out);
  dispatch_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    const auto* in = static_cast<const T*>(chunks);
    auto* sum = static_cast<T*>(out);
    if (vector) {
      const size_t vectors = bytes / sizeof(uint4);
      sum_chunks_vector_kernel<T><<<grid_for(vectors), 256, 0, stream>>>(in, sum, count, vectors, nranks);
    } else {
      sum_chunks_kernel<T><<<grid_for(count), 256, 0, stream>>>(in, sum, count, nranks);
    }
  });
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace

std::string copy_engine_all_reduce_refusal(uint64_t count, int nranks) {
  if (count % uint64_t(nranks) == 0) return "";
  return "a copy-engine all-reduce splits its " + std::to_string(count) + " elements into " + std::to_string(nranks) +
         " equal chunks";
}

void enqueue_copy_engine_reduce_scatter(RankContext& ctx, ncclComm_t comm, const void* send, void* recv,
                                        void* scratch, size_t recv_count, DType dtype, cudaStream_t stream) {
  // Rank r's chunk j goes to rank j's scratch slot r: each rank then holds every rank's copy of its
  // own chunk, side by side.
  TANDEM_NCCL_CHECK(comm, ncclAlltoAll(send, scratch, recv_count, to_nccl(dtype), comm, stream));
  // On the stream before the sum is launched behind it.
  ctx.await_communicator(comm, "copy-engine all-to-all");
  sum_chunks(scratch, recv, recv_count, dtype, ctx.nranks, stream);
}

void enqueue_copy_engine_all_reduce(RankContext& ctx, ncclComm_t comm, const void* send, void* recv, void* scratch,
                                    size_t count, DType dtype, cudaStream_t stream) {
  const std::string why = copy_engine_all_reduce_refusal(count, ctx.nranks);
  TANDEM_REQUIRE(why.empty(), why);
  const size_t chunk = count / size_t(ctx.nranks);
  void* own = static_cast<char*>(recv) + size_t(ctx.rank) * chunk * dtype_size(dtype);
  // With send == recv, the all-to-all has read every chunk of `send` before the sum overwrites this
  // rank's chunk: both are on `stream`, in order.
  enqueue_copy_engine_reduce_scatter(ctx, comm, send, own, scratch, chunk, dtype, stream);
  // In place: this rank's chunk already sits at its offset in `recv`. The caller awaits this call.
  TANDEM_NCCL_CHECK(comm, ncclAllGather(own, recv, chunk, to_nccl(dtype), comm, stream));
}

}  // namespace tandem::bench
