#include "harness/copy_engine_reduction.h"

#include "harness/values.cuh"
#include "tandem/cuda_check.h"
#include "tandem/error.h"

namespace tandem::bench {
namespace {

// out[i] = sum over j < nranks of chunks[j * count + i], accumulated in fp32.
template <class T>
__global__ void sum_chunks_kernel(const T* chunks, T* out, size_t count, int nranks) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    float sum = 0;
    for (int j = 0; j < nranks; ++j) sum += to_float(chunks[size_t(j) * count + i]);
    out[i] = from_float<T>(sum);
  }
}

void sum_chunks(const void* chunks, void* out, size_t count, DType dtype, int nranks, cudaStream_t stream) {
  dispatch_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    sum_chunks_kernel<T><<<grid_for(count), 256, 0, stream>>>(static_cast<const T*>(chunks), static_cast<T*>(out),
                                                              count, nranks);
  });
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace

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
  const auto nranks = size_t(ctx.nranks);
  TANDEM_REQUIRE(count % nranks == 0, "a copy-engine all-reduce splits its " + std::to_string(count) +
                                          " elements into " + std::to_string(nranks) + " equal chunks");
  const size_t chunk = count / nranks;
  void* own = static_cast<char*>(recv) + size_t(ctx.rank) * chunk * dtype_size(dtype);
  // With send == recv, the all-to-all has read every chunk of `send` before the sum overwrites this
  // rank's chunk: both are on `stream`, in order.
  enqueue_copy_engine_reduce_scatter(ctx, comm, send, own, scratch, chunk, dtype, stream);
  // In place: this rank's chunk already sits at its offset in `recv`. The caller awaits this call.
  TANDEM_NCCL_CHECK(comm, ncclAllGather(own, recv, chunk, to_nccl(dtype), comm, stream));
}

}  // namespace tandem::bench
