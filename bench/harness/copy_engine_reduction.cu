#include "harness/copy_engine_reduction.h"

#include <cstdint>

#include "harness/values.cuh"
#include "tandem/cuda_check.h"
#include "tandem/error.h"

namespace tandem::bench {
namespace {

// out[i] = sum over j < nranks of chunk j's element i, accumulated in fp32, where chunk j is at
// chunks + j * count, except chunk `own_index` (>= 0), which is `own`. The sum runs on the SMs while
// the GEMMs beside it want them, so it moves 16 bytes a load: a memory-bound kernel that issues 8x
// fewer instructions per byte than scalar bf16 loads holds its SMs for less time.
template <class T>
__device__ const T* chunk_of(const T* chunks, const T* own, int own_index, int j, size_t count) {
  return j == own_index ? own : chunks + size_t(j) * count;
}

template <class T>
__global__ void sum_chunks_vector_kernel(const T* chunks, const T* own, int own_index, T* out, size_t count,
                                         size_t vectors, int nranks) {
  constexpr int kPerVector = sizeof(uint4) / sizeof(T);
  for (size_t v = blockIdx.x * size_t(blockDim.x) + threadIdx.x; v < vectors; v += size_t(gridDim.x) * blockDim.x) {
    float sum[kPerVector] = {};
    for (int j = 0; j < nranks; ++j) {
      const uint4 loaded = reinterpret_cast<const uint4*>(chunk_of(chunks, own, own_index, j, count))[v];
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
__global__ void sum_chunks_kernel(const T* chunks, const T* own, int own_index, T* out, size_t count, int nranks) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    float sum = 0;
    for (int j = 0; j < nranks; ++j) sum += to_float(chunk_of(chunks, own, own_index, j, count)[i]);
    out[i] = from_float<T>(sum);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % sizeof(uint4) == 0; }

// `own_index` < 0: every chunk from `chunks`.
void sum_chunks(const void* chunks, const void* own, int own_index, void* out, size_t count, DType dtype, int nranks,
                cudaStream_t stream) {
  const size_t bytes = count * dtype_size(dtype);
  const bool vector =
      bytes % sizeof(uint4) == 0 && aligned16(chunks) && aligned16(out) && (own_index < 0 || aligned16(own));
  dispatch_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    const auto* in = static_cast<const T*>(chunks);
    const auto* mine = static_cast<const T*>(own);
    auto* sum = static_cast<T*>(out);
    if (vector) {
      const size_t vectors = bytes / sizeof(uint4);
      sum_chunks_vector_kernel<T><<<grid_for(vectors), 256, 0, stream>>>(in, mine, own_index, sum, count, vectors, nranks);
    } else {
      sum_chunks_kernel<T><<<grid_for(count), 256, 0, stream>>>(in, mine, own_index, sum, count, nranks);
    }
  });
  TANDEM_CUDA_CHECK_LAUNCH();
}

const char* at(const void* base, size_t elements, DType dtype) {
  return static_cast<const char*>(base) + elements * dtype_size(dtype);
}

}  // namespace

std::string copy_engine_all_reduce_refusal(uint64_t count, int nranks) {
  if (count % uint64_t(nranks) == 0) return "";
  return "a copy-engine all-reduce splits its " + std::to_string(count) + " elements into " + std::to_string(nranks) +
         " equal chunks";
}

void enqueue_copy_engine_exchange(RankContext& ctx, const CopyEngineLanes& lanes, const void* send,
                                  size_t send_stride, void* recv, size_t count, DType dtype, bool own_chunk_copied,
                                  cudaStream_t stream) {
  TANDEM_REQUIRE(int(lanes.comms.size()) == ctx.nranks, "copy-engine exchange: " + std::to_string(lanes.comms.size()) +
                                                            " lanes for " + std::to_string(ctx.nranks) + " ranks");
  int priority = 0;
  TANDEM_CUDA_CHECK(cudaStreamGetPriority(stream, &priority));
  const auto& side = !lanes.high.empty() && priority == lanes.high.front().priority() ? lanes.high : lanes.low;
  // The side streams start where `stream` is: nothing before this point on `stream` may be missed.
  TANDEM_CUDA_CHECK(cudaEventRecord(lanes.fork, stream));
  // Lane r gathers to root r on every rank (a communicator's calls must match across ranks). Each
  // gather ends with NCCL's completion handshake, so it is over on every rank once every push to
  // its root has landed.
  for (int root = 0; root < ctx.nranks; ++root) {
    ncclComm_t comm = lanes.comms[size_t(root)];
    cudaStream_t s = root == 0 ? stream : side[size_t(root) - 1].get();
    if (root > 0) TANDEM_CUDA_CHECK(cudaStreamWaitEvent(s, lanes.fork, 0));
    // At the root, its own chunk of `recv` as input makes the gather in place (nothing copied).
    const bool in_place = root == ctx.rank && !own_chunk_copied;
    const void* input = in_place ? at(recv, size_t(root) * count, dtype) : at(send, size_t(root) * send_stride, dtype);
    TANDEM_NCCL_CHECK(comm, ncclGather(input, recv, count, to_nccl(dtype), root, comm, s));
    ctx.await_communicator(comm, "copy-engine gather to rank " + std::to_string(root));
    if (root > 0) {
      TANDEM_CUDA_CHECK(cudaEventRecord(lanes.joins[size_t(root) - 1], s));
      TANDEM_CUDA_CHECK(cudaStreamWaitEvent(stream, lanes.joins[size_t(root) - 1], 0));
    }
  }
}

void enqueue_copy_engine_reduce_scatter(RankContext& ctx, const CopyEngineLanes& lanes, const void* send, void* recv,
                                        void* scratch, size_t recv_count, DType dtype, cudaStream_t stream) {
  // Rank j's chunk r lands in rank r's scratch slot j; rank r's own slot stays unwritten, and the sum
  // reads that chunk from `send` itself.
  enqueue_copy_engine_exchange(ctx, lanes, send, recv_count, scratch, recv_count, dtype, false, stream);
  sum_chunks(scratch, at(send, size_t(ctx.rank) * recv_count, dtype), ctx.rank, recv, recv_count, dtype, ctx.nranks,
             stream);
}

void enqueue_copy_engine_all_reduce(RankContext& ctx, const CopyEngineLanes& lanes, const void* send, void* recv,
                                    void* scratch, size_t count, DType dtype, cudaStream_t stream) {
  const std::string why = copy_engine_all_reduce_refusal(count, ctx.nranks);
  TANDEM_REQUIRE(why.empty(), why);
  const size_t chunk = count / size_t(ctx.nranks);
  void* own = static_cast<char*>(recv) + size_t(ctx.rank) * chunk * dtype_size(dtype);
  // With send == recv, the exchange has read every chunk of `send` (its gathers are joined back into
  // `stream`) before the sum overwrites this rank's chunk, which it reads element by element itself.
  enqueue_copy_engine_reduce_scatter(ctx, lanes, send, own, scratch, chunk, dtype, stream);
  // In place on lane 0: NCCL's copy-engine all-gather copies nothing locally. The caller awaits it.
  ncclComm_t comm = lanes.comms.front();
  TANDEM_NCCL_CHECK(comm, ncclAllGather(own, recv, chunk, to_nccl(dtype), comm, stream));
}

}  // namespace tandem::bench
