// The copy-engine collectives (tandem/copy_engine.h) and the sum kernel of their reductions.
#include <cstdint>

#include "tandem/copy_engine.h"
#include "tandem/cuda_check.h"
#include "tandem/error.h"
#include "tandem/float_conversion.h"

namespace tandem {
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

constexpr unsigned kThreads = 256;

// Enough blocks of kThreads for `n` items, capped: the kernels loop over what is left.
unsigned blocks_for(size_t n) {
  const size_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 * 16 ? (blocks ? blocks : 1) : 65535 * 16);
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
      sum_chunks_vector_kernel<T>
          <<<blocks_for(vectors), kThreads, 0, stream>>>(in, mine, own_index, sum, count, vectors, nranks);
    } else {
      sum_chunks_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(in, mine, own_index, sum, count, nranks);
    }
  });
  TANDEM_CUDA_CHECK_LAUNCH();
}

const char* at(const void* base, size_t elements, DType dtype) {
  return static_cast<const char*>(base) + elements * dtype_size(dtype);
}

void require_usable(const CopyEngineLanes& lanes, CopyEngineCollective kind, size_t count, DType dtype) {
  const std::string why = copy_engine_refusal(kind, count, lanes.nranks(), to_nccl(dtype));
  TANDEM_REQUIRE(why.empty(), why);
}

}  // namespace

const char* to_string(CopyEngineCollective kind) {
  switch (kind) {
    case CopyEngineCollective::AllReduce:
      return "all-reduce";
    case CopyEngineCollective::ReduceScatter:
      return "reduce-scatter";
    case CopyEngineCollective::AllGather:
      return "all-gather";
    case CopyEngineCollective::AllToAll:
      break;
  }
  return "all-to-all";
}

std::string copy_engine_refusal(CopyEngineCollective kind, uint64_t count, int nranks, ncclDataType_t dtype,
                                ncclRedOp_t op) {
  const std::string what = std::string("a copy-engine ") + to_string(kind);
  if (nranks < 1) return what + " needs at least one rank, not " + std::to_string(nranks);
  if (!from_nccl(dtype))
    return what + " moves bf16, fp16 or fp32 elements, not NCCL data type " + std::to_string(int(dtype));
  const bool reduces = kind == CopyEngineCollective::AllReduce || kind == CopyEngineCollective::ReduceScatter;
  if (reduces && op != ncclSum) return what + " only sums (NCCL reduction op " + std::to_string(int(op)) + ")";
  if (kind == CopyEngineCollective::AllReduce && count % uint64_t(nranks) != 0)
    return what + " splits its " + std::to_string(count) + " elements into " + std::to_string(nranks) + " equal chunks";
  return "";
}

size_t copy_engine_scratch_bytes(CopyEngineCollective kind, uint64_t count, DType dtype, int nranks) {
  switch (kind) {
    case CopyEngineCollective::AllReduce:
      return size_t(count) * dtype_size(dtype);
    case CopyEngineCollective::ReduceScatter:
      return size_t(count) * size_t(nranks) * dtype_size(dtype);
    case CopyEngineCollective::AllGather:
    case CopyEngineCollective::AllToAll:
      break;
  }
  return 0;
}

void copy_engine_exchange(const CopyEngineLanes& lanes, const void* send, size_t send_stride, void* recv, size_t count,
                          DType dtype, bool own_chunk_copied, cudaStream_t stream) {
  TANDEM_REQUIRE(lanes.usable_ && int(lanes.comms_.size()) == lanes.nranks_,
                 "copy-engine exchange: the lanes were closed or aborted");
  int priority = 0;
  TANDEM_CUDA_CHECK(cudaStreamGetPriority(stream, &priority));
  const auto& side = !lanes.high_.empty() && priority == lanes.high_.front().priority() ? lanes.high_ : lanes.low_;
  // The side streams start where `stream` is: nothing before this point on `stream` may be missed.
  TANDEM_CUDA_CHECK(cudaEventRecord(lanes.fork_, stream));
  // Lane r gathers to root r on every rank (a communicator's calls must match across ranks). Each
  // gather ends with NCCL's completion handshake, so it is over on every rank once every push to
  // its root has landed.
  for (int root = 0; root < lanes.nranks_; ++root) {
    ncclComm_t comm = lanes.comms_[size_t(root)];
    cudaStream_t s = root == 0 ? stream : side[size_t(root) - 1].get();
    if (root > 0) TANDEM_CUDA_CHECK(cudaStreamWaitEvent(s, lanes.fork_, 0));
    // At the root, its own chunk of `recv` as input makes the gather in place (nothing copied).
    const bool in_place = root == lanes.rank_ && !own_chunk_copied;
    const void* input = in_place ? at(recv, size_t(root) * count, dtype) : at(send, size_t(root) * send_stride, dtype);
    TANDEM_NCCL_CHECK(comm, ncclGather(input, recv, count, to_nccl(dtype), root, comm, s));
    await_communicator(comm, lanes.rules_, "copy-engine gather to rank " + std::to_string(root));
    if (root > 0) {
      TANDEM_CUDA_CHECK(cudaEventRecord(lanes.joins_[size_t(root) - 1], s));
      TANDEM_CUDA_CHECK(cudaStreamWaitEvent(stream, lanes.joins_[size_t(root) - 1], 0));
    }
  }
}

void copy_engine_reduce_scatter(const CopyEngineLanes& lanes, const void* send, void* recv, void* scratch,
                                size_t recv_count, DType dtype, cudaStream_t stream) {
  require_usable(lanes, CopyEngineCollective::ReduceScatter, recv_count, dtype);
  // Rank j's chunk r lands in rank r's scratch slot j; rank r's own slot stays unwritten, and the sum
  // reads that chunk from `send` itself.
  copy_engine_exchange(lanes, send, recv_count, scratch, recv_count, dtype, false, stream);
  sum_chunks(scratch, at(send, size_t(lanes.rank()) * recv_count, dtype), lanes.rank(), recv, recv_count, dtype,
             lanes.nranks(), stream);
}

void copy_engine_all_reduce(const CopyEngineLanes& lanes, const void* send, void* recv, void* scratch, size_t count,
                            DType dtype, cudaStream_t stream) {
  require_usable(lanes, CopyEngineCollective::AllReduce, count, dtype);
  const size_t chunk = count / size_t(lanes.nranks());
  void* own = static_cast<char*>(recv) + size_t(lanes.rank()) * chunk * dtype_size(dtype);
  // With send == recv, the exchange has read every chunk of `send` (its gathers are joined back into
  // `stream`) before the sum overwrites this rank's chunk, which it reads element by element itself.
  copy_engine_reduce_scatter(lanes, send, own, scratch, chunk, dtype, stream);
  // In place on lane 0: NCCL's copy-engine all-gather copies nothing locally.
  ncclComm_t comm = lanes.comms().front();
  TANDEM_NCCL_CHECK(comm, ncclAllGather(own, recv, chunk, to_nccl(dtype), comm, stream));
  await_communicator(comm, lanes.rules(), "copy-engine all-gather of the all-reduce");
}

void copy_engine_all_gather(const CopyEngineLanes& lanes, const void* send, void* recv, size_t send_count, DType dtype,
                            cudaStream_t stream) {
  require_usable(lanes, CopyEngineCollective::AllGather, send_count, dtype);
  if (send == at(recv, size_t(lanes.rank()) * send_count, dtype)) {
    // In place: NCCL's copy-engine all-gather only copies to the peers.
    ncclComm_t comm = lanes.comms().front();
    TANDEM_NCCL_CHECK(comm, ncclAllGather(send, recv, send_count, to_nccl(dtype), comm, stream));
    await_communicator(comm, lanes.rules(), "copy-engine all-gather");
    return;
  }
  // Out of place, NCCL would copy this rank's own chunk first, on the SMs, in one batch with the
  // peers' copies: the exchange leaves that copy to this rank's own gather instead.
  copy_engine_exchange(lanes, send, 0, recv, send_count, dtype, true, stream);
}

void copy_engine_all_to_all(const CopyEngineLanes& lanes, const void* send, void* recv, size_t count, DType dtype,
                            cudaStream_t stream) {
  require_usable(lanes, CopyEngineCollective::AllToAll, count, dtype);
  // NCCL's own copy-engine all-to-all copies this rank's chunk first, on the SMs, in one batch with
  // the peers' copies; the exchange leaves that copy to this rank's own gather.
  copy_engine_exchange(lanes, send, count, recv, count, dtype, true, stream);
}

}  // namespace tandem
