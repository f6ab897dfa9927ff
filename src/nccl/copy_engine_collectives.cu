// The copy-engine collectives (tandem/copy_engine.h): the executor of copy-engine plans
// (tandem/copy_engine_plan.h), its kernel (the scaled sum of a reduction), and the collectives on
// buffers already in symmetric windows.
#include <cstdint>

#include "tandem/copy_engine.h"
#include "tandem/cuda_check.h"
#include "tandem/error.h"
#include "tandem/float_conversion.h"

// The kernels are named tandemCollective_*, at global scope: the interposer and the timeline class
// such kernels as communication (tandem/kernel_names.h), as NCCL's own. `static`: each library that
// compiles this file keeps its own copy.

// out[i] = sum over j < nranks of chunk j's element i, each term scaled (tandem::SumScale),
// accumulated in fp32 and rounded once, where chunk j is at chunks + j * stride, except chunk
// `own_index` (>= 0), which is `own`; also[i] too where `also` is set (the result goes to the
// caller's recv and to the pool part the all-gather sends from in one pass, not a copy after). The sum runs on the SMs
// while the GEMMs beside it want them, so it moves 16 bytes a load: a memory-bound kernel that issues 8x fewer
// instructions per byte than scalar bf16 loads holds its SMs for less time. The scaling costs nothing beside the loads.
template <class T>
__device__ const T* tandem_chunk_of(const T* chunks, const T* own, int own_index, int j, size_t stride) {
  return j == own_index ? own : chunks + size_t(j) * stride;
}

// One term: converted to fp32, multiplied or divided by the scalar and rounded to fp32 (x * 1 is
// exact: a plain sum). The _rn intrinsics are never contracted into a fused multiply-add with the
// sum, so the numerics are the documented ones (tandem::SumScale), whatever the compiler does.
__device__ inline float tandem_term(float x, float scalar, bool divide) {
  return divide ? __fdiv_rn(x, scalar) : __fmul_rn(x, scalar);
}

// The scalar: in device memory (an element of type T) when `device_scalar` is set, else `scalar`.
template <class T>
__device__ float tandem_scalar(float scalar, const void* device_scalar) {
  return device_scalar ? tandem::to_float(*static_cast<const T*>(device_scalar)) : scalar;
}

template <class T>
static __global__ void tandemCollective_sum_vectors(const T* chunks, const T* own, int own_index, T* out, T* also,
                                                    size_t stride, size_t vectors, int nranks, float scalar,
                                                    const void* device_scalar, bool divide) {
  constexpr int kPerVector = sizeof(uint4) / sizeof(T);
  const float s = tandem_scalar<T>(scalar, device_scalar);
  for (size_t v = blockIdx.x * size_t(blockDim.x) + threadIdx.x; v < vectors; v += size_t(gridDim.x) * blockDim.x) {
    float sum[kPerVector] = {};
    for (int j = 0; j < nranks; ++j) {
      const uint4 loaded = reinterpret_cast<const uint4*>(tandem_chunk_of(chunks, own, own_index, j, stride))[v];
      const T* elements = reinterpret_cast<const T*>(&loaded);
      for (int k = 0; k < kPerVector; ++k)
        sum[k] = __fadd_rn(sum[k], tandem_term(tandem::to_float(elements[k]), s, divide));
    }
    uint4 stored;
    T* elements = reinterpret_cast<T*>(&stored);
    for (int k = 0; k < kPerVector; ++k) elements[k] = tandem::from_float<T>(sum[k]);
    reinterpret_cast<uint4*>(out)[v] = stored;
    if (also) reinterpret_cast<uint4*>(also)[v] = stored;
  }
}

// The same, an element at a time: for chunks that are not 16-byte aligned.
template <class T>
static __global__ void tandemCollective_sum(const T* chunks, const T* own, int own_index, T* out, T* also, size_t count,
                                            size_t stride, int nranks, float scalar, const void* device_scalar,
                                            bool divide) {
  const float s = tandem_scalar<T>(scalar, device_scalar);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    float sum = 0;
    for (int j = 0; j < nranks; ++j)
      sum = __fadd_rn(sum,
                      tandem_term(tandem::to_float(tandem_chunk_of(chunks, own, own_index, j, stride)[i]), s, divide));
    const T result = tandem::from_float<T>(sum);
    out[i] = result;
    if (also) also[i] = result;
  }
}

namespace tandem {
namespace {

constexpr unsigned kThreads = 256;

// Enough blocks of kThreads for `n` items, capped: the kernels loop over what is left.
unsigned blocks_for(size_t n) {
  const size_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 * 16 ? (blocks ? blocks : 1) : 65535 * 16);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % sizeof(uint4) == 0; }

DType summable(ncclDataType_t type) {
  const std::optional<DType> t = from_nccl(type);
  TANDEM_REQUIRE(t.has_value(), "copy-engine sum: NCCL data type " + std::to_string(int(type)) +
                                    " has no sum kernel (bf16, fp16, fp32 only)");
  return *t;
}

// `own_index` < 0: every chunk from `chunks`. `also`: null, or a second place for the result. The
// chunks lie `stride` elements apart (>= count).
void sum_chunks(const void* chunks, size_t stride, const void* own, int own_index, void* out, void* also, size_t count,
                DType dtype, int nranks, const SumScale& scale, cudaStream_t stream) {
  const size_t bytes = count * dtype_size(dtype);
  const bool vector = bytes % sizeof(uint4) == 0 && (stride * dtype_size(dtype)) % sizeof(uint4) == 0 &&
                      aligned16(chunks) && aligned16(out) && (own_index < 0 || aligned16(own)) &&
                      (also == nullptr || aligned16(also));
  const bool divide = scale.kind == SumScale::Kind::Divide;
  const float scalar = scale.kind == SumScale::Kind::None ? 1.0f : scale.value;
  const void* device_scalar = scale.kind == SumScale::Kind::Multiply ? scale.device_value : nullptr;
  dispatch_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    const auto* in = static_cast<const T*>(chunks);
    const auto* mine = static_cast<const T*>(own);
    auto* sum = static_cast<T*>(out);
    auto* second = static_cast<T*>(also);
    if (vector) {
      const size_t vectors = bytes / sizeof(uint4);
      tandemCollective_sum_vectors<T><<<blocks_for(vectors), kThreads, 0, stream>>>(
          in, mine, own_index, sum, second, stride, vectors, nranks, scalar, device_scalar, divide);
    } else {
      tandemCollective_sum<T><<<blocks_for(count), kThreads, 0, stream>>>(
          in, mine, own_index, sum, second, count, stride, nranks, scalar, device_scalar, divide);
    }
  });
  TANDEM_CUDA_CHECK_LAUNCH();
}

// A plan's Stage step: `rows` rows of `width` bytes, `from_pitch` and `to_pitch` bytes apart (the
// two sides never overlap: a pool part and the caller's buffer). cudaMemcpy2DAsync moves them in one
// copy (one node in a graph); it takes no pitch above the device's cudaDevAttrMaxPitch (2^31 - 1
// bytes on current GPUs: the segment stride of an all-gather of more than 1 Gi bf16 per rank
// exceeds it), and the driver's 2-D copy within a device may refuse pitches that did not come from
// a pitched allocation (cuMemcpy2D's documentation; the segments' pitch is the caller's count, any
// number of bytes). Either way each row becomes a copy of its own: the refusal is checked when the
// copy is enqueued, before anything runs.
void copy_rows(char* to, size_t to_pitch, const char* from, size_t from_pitch, size_t width, uint64_t rows,
               cudaStream_t stream) {
  if (rows <= 1 || (from_pitch == width && to_pitch == width)) {
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(to, from, width * (rows ? rows : 1), cudaMemcpyDeviceToDevice, stream));
    return;
  }
  int device = 0, max_pitch = 0;
  TANDEM_CUDA_CHECK(cudaGetDevice(&device));
  TANDEM_CUDA_CHECK(cudaDeviceGetAttribute(&max_pitch, cudaDevAttrMaxPitch, device));
  if (from_pitch <= size_t(max_pitch) && to_pitch <= size_t(max_pitch)) {
    const cudaError_t copy_2d =
        cudaMemcpy2DAsync(to, to_pitch, from, from_pitch, width, size_t(rows), cudaMemcpyDeviceToDevice, stream);
    if (copy_2d == cudaSuccess) return;
    if (copy_2d != cudaErrorInvalidPitchValue && copy_2d != cudaErrorInvalidValue) TANDEM_CUDA_CHECK(copy_2d);
    (void)cudaGetLastError();  // the refused 2-D copy is not the program's error
  }
  for (uint64_t k = 0; k < rows; ++k)
    TANDEM_CUDA_CHECK(
        cudaMemcpyAsync(to + k * to_pitch, from + k * from_pitch, width, cudaMemcpyDeviceToDevice, stream));
}

char* byte_at(const void* base, uint64_t elements, size_t element_bytes) {
  return static_cast<char*>(const_cast<void*>(base)) + elements * element_bytes;
}

// The address of a plan's place, given the call's buffers.
char* address_of(const PlanBuffers& b, PlanAt a, size_t element_bytes) {
  const void* const bases[] = {b.send, b.recv, b.pool_input, b.pool_output, b.pool_scratch};  // PlanBuffer's order
  const void* base = bases[static_cast<size_t>(a.buffer)];
  TANDEM_REQUIRE(base != nullptr, std::string("copy-engine plan: no ") + to_string(a.buffer) + " buffer was given");
  return byte_at(base, a.offset, element_bytes);
}

// A call on buffers already in symmetric windows: its plan (nothing staged, no pool), or why it has
// none. The route's rule first (decide_route, the one rule: the windowed form never takes a call the
// route refuses for a reason of the call's own, nor refuses one it takes), then what the windowed
// form lacks: a scale (its sums are plain) and staging (its plan must need no pool part).
struct WindowedPlan {
  std::string refusal;
  CopyEnginePlan plan;
};

WindowedPlan plan_in_windows(const CopyEngineCall& c, int nranks, int rank) {
  WindowedPlan w;
  const std::string what = std::string("a copy-engine ") + to_string(c.kind);
  if (nranks < 1) {
    w.refusal = what + " needs at least one rank, not " + std::to_string(nranks);
    return w;
  }
  const RouteRequest request = route_request(c, nranks, rank);
  const RouteOutcome outcome = decide_route(request);
  // The route leaves a communicator of one rank to NCCL (nothing to exchange, no window memory
  // wanted); the windowed form runs there all the same: the benchmark measures a policy's cost on
  // one GPU.
  if (outcome != RouteOutcome::CopyEngine && outcome != RouteOutcome::SingleRank) {
    w.refusal = what + ": " + explain(outcome) + " (" + to_string(outcome) + ")";
    return w;
  }
  if (reduces(c.kind) && c.reduction != Reduction::Sum) {
    w.refusal = what + " on window memory only sums, not a " + to_string(c.reduction);
    return w;
  }
  w.plan = plan_copy_engine_collective(PlanRequest(request, true, true));
  // Only the staged route pads a count that does not split into equal chunks.
  if (w.plan.input_elements != 0 || w.plan.output_elements != 0)
    w.refusal =
        what + " splits its " + std::to_string(c.count) + " elements into " + std::to_string(nranks) + " equal chunks";
  return w;
}

}  // namespace

std::string copy_engine_refusal(const CopyEngineCall& call, int nranks, int rank) {
  return plan_in_windows(call, nranks, rank).refusal;
}

size_t copy_engine_scratch_bytes(const CopyEngineCall& call, int nranks) {
  const WindowedPlan w = plan_in_windows(call, nranks, 0);
  return w.refusal.empty() ? size_t(w.plan.scratch_elements) * nccl_type_bytes(call.dtype) : 0;
}

void copy_engine_collective(const CopyEngineLanes& lanes, const CopyEngineCall& call, void* scratch) {
  const WindowedPlan w = plan_in_windows(call, lanes.nranks(), lanes.rank());
  TANDEM_REQUIRE(w.refusal.empty(), w.refusal);
  PlanBuffers buffers;
  buffers.send = call.send;
  buffers.recv = call.recv;
  buffers.pool_scratch = scratch;
  execute_copy_engine_plan(lanes, w.plan, buffers, call.dtype, SumScale{}, call.stream);
}

void on_side_streams(const CopyEngineLanes& lanes, cudaStream_t stream, int count,
                     const std::function<void(int, cudaStream_t)>& body) {
  TANDEM_REQUIRE(lanes.usable_ && int(lanes.comms_.size()) == lanes.nranks_,
                 "copy-engine lanes: they were closed or aborted");
  TANDEM_REQUIRE(count >= 1 && count <= lanes.nranks_, "copy-engine lanes: " + std::to_string(count) + " streams");
  int priority = 0;
  TANDEM_CUDA_CHECK(cudaStreamGetPriority(stream, &priority));
  const auto& side = !lanes.high_.empty() && priority == lanes.high_.front().priority() ? lanes.high_ : lanes.low_;
  // The side streams start where `stream` is: nothing before this point on `stream` may be missed.
  TANDEM_CUDA_CHECK(cudaEventRecord(lanes.fork_, stream));
  for (int k = 0; k < count; ++k) {
    cudaStream_t s = k == 0 ? stream : side[size_t(k) - 1].get();
    if (k > 0) TANDEM_CUDA_CHECK(cudaStreamWaitEvent(s, lanes.fork_, 0));
    body(k, s);
    if (k > 0) {
      TANDEM_CUDA_CHECK(cudaEventRecord(lanes.joins_[size_t(k) - 1], s));
      TANDEM_CUDA_CHECK(cudaStreamWaitEvent(stream, lanes.joins_[size_t(k) - 1], 0));
    }
  }
}

void copy_engine_exchange(const CopyEngineLanes& lanes, const void* send, size_t send_stride, void* recv, size_t count,
                          ncclDataType_t type, bool own_chunk_copied, cudaStream_t stream) {
  const size_t element_bytes = nccl_type_bytes(type);
  TANDEM_REQUIRE(element_bytes > 0, "copy-engine exchange: NCCL data type " + std::to_string(int(type)));
  // Lane r gathers to root r on every rank (a communicator's calls must match across ranks). Each
  // gather ends with NCCL's completion handshake, so it is over on every rank once every push to
  // its root has landed.
  on_side_streams(lanes, stream, lanes.nranks(), [&](int root, cudaStream_t s) {
    ncclComm_t comm = lanes.comms()[size_t(root)];
    // At the root, its own chunk of `recv` as input makes the gather in place (nothing copied).
    const bool in_place = root == lanes.rank() && !own_chunk_copied;
    const void* input = in_place ? byte_at(recv, size_t(root) * count, element_bytes)
                                 : byte_at(send, size_t(root) * send_stride, element_bytes);
    TANDEM_NCCL_CHECK(comm, ncclGather(input, recv, count, type, root, comm, s));
    await_communicator(comm, lanes.rules(), "copy-engine gather to rank " + std::to_string(root));
  });
}

namespace {

// Every rank has reached this point on its stream (so has run everything before it there) once it
// is over on this rank's `stream`: NCCL's in-place all-gather of 16 bytes per rank on lane 0, in the
// pool's barrier part, whose completion needs every rank's part. A copy-engine all-gather, like the
// route's other collectives.
void barrier(const CopyEngineLanes& lanes, void* area, cudaStream_t stream, const char* where) {
  TANDEM_REQUIRE(area != nullptr, std::string("copy-engine ") + where + ": no barrier part in the pool");
  ncclComm_t comm = lanes.comms().front();
  const char* own = static_cast<char*>(area) + size_t(lanes.rank()) * kBarrierBytesPerRank;
  TANDEM_NCCL_CHECK(comm, ncclAllGather(own, area, kBarrierBytesPerRank, ncclUint8, comm, stream));
  await_communicator(comm, lanes.rules(), std::string("copy-engine barrier of a ") + where);
}

// The address of `local` (in this rank's pool) in rank `peer`'s pool.
char* in_peer_pool(const PlanBuffers& b, int peer, const char* local) {
  TANDEM_REQUIRE(b.pool != nullptr && b.peer_pools != nullptr && size_t(peer) < b.peer_pools->size(),
                 "copy-engine plan: the peers' pools are not known by address");
  return (*b.peer_pools)[size_t(peer)] + (local - b.pool);
}

// A Push or a Pull (copy_engine_plan.h): between two barriers, one copy per peer, each on a stream of
// its own so that the copy engines move them at once. The barrier before: every peer is done with
// the pool parts written here (its sum of a previous call read its scratch) and has written those
// read here (its sum's result). The barrier after: every copy into this rank's pool has landed, and
// no peer reads this rank's pool any more, before the sum or the next call.
void copy_with_peers(const CopyEngineLanes& lanes, const PlanStep& step, const PlanBuffers& buffers,
                     size_t element_bytes, cudaStream_t stream) {
  const bool push = step.op == PlanStep::Op::Push;
  const std::vector<PeerCopy> copies = peer_copies(step, lanes.rank(), lanes.nranks());
  const char* what = push ? "push" : "pull";
  barrier(lanes, buffers.barrier, stream, what);
  if (!copies.empty())
    on_side_streams(lanes, stream, int(copies.size()), [&](int k, cudaStream_t s) {
      const PeerCopy& copy = copies[size_t(k)];
      const char* source = address_of(buffers, copy.from, element_bytes);
      char* target = address_of(buffers, copy.to, element_bytes);
      if (push)
        target = in_peer_pool(buffers, copy.peer, target);
      else
        source = in_peer_pool(buffers, copy.peer, source);
      TANDEM_CUDA_CHECK(
          cudaMemcpyAsync(target, source, size_t(copy.elements) * element_bytes, cudaMemcpyDeviceToDevice, s));
    });
  barrier(lanes, buffers.barrier, stream, what);
}

}  // namespace

void execute_copy_engine_plan(const CopyEngineLanes& lanes, const CopyEnginePlan& plan, const PlanBuffers& buffers,
                              ncclDataType_t type, const SumScale& scale, cudaStream_t stream) {
  const size_t element_bytes = nccl_type_bytes(type);
  TANDEM_REQUIRE(element_bytes > 0, "copy-engine collective: NCCL data type " + std::to_string(int(type)));
  for (const PlanStep& step : plan.steps) {
    char* to = address_of(buffers, step.to, element_bytes);
    switch (step.op) {
      case PlanStep::Op::Stage:
      case PlanStep::Op::Copy: {
        const char* from = address_of(buffers, step.from, element_bytes);
        TANDEM_REQUIRE(step.rows <= 1 || (step.from_pitch >= step.elements && step.to_pitch >= step.elements),
                       "copy-engine plan: a staged row wider than its pitch");
        if (from != to || (step.rows > 1 && step.from_pitch != step.to_pitch))
          copy_rows(to, size_t(step.to_pitch) * element_bytes, from, size_t(step.from_pitch) * element_bytes,
                    size_t(step.elements) * element_bytes, step.rows, stream);
        break;
      }
      case PlanStep::Op::Exchange:
        copy_engine_exchange(lanes, address_of(buffers, step.from, element_bytes), step.stride, to, step.elements, type,
                             step.own_chunk_copied, stream);
        break;
      case PlanStep::Op::Sum:
        TANDEM_REQUIRE(step.stride >= step.elements, "copy-engine plan: a sum's chunks lie closer than its elements");
        sum_chunks(address_of(buffers, step.from, element_bytes), step.stride,
                   address_of(buffers, step.own, element_bytes), step.own_index, to,
                   step.writes_also ? address_of(buffers, step.also, element_bytes) : nullptr, step.elements,
                   summable(type), lanes.nranks(), scale, stream);
        break;
      case PlanStep::Op::AllGather: {
        // In place on lane 0: NCCL's copy-engine all-gather copies nothing locally.
        ncclComm_t comm = lanes.comms().front();
        const char* own = to + size_t(lanes.rank()) * step.elements * element_bytes;
        TANDEM_NCCL_CHECK(comm, ncclAllGather(own, to, step.elements, type, comm, stream));
        await_communicator(comm, lanes.rules(), "copy-engine all-gather");
        break;
      }
      case PlanStep::Op::Scatter: {
        // On lane 0, like the all-gather that follows it on the same stream: this rank's chunk of
        // `to` from the root. NCCL reads `from` on the root alone; there the scatter is in place when
        // `from` is `to` (the root's chunk stays where it is).
        ncclComm_t comm = lanes.comms().front();
        char* own = to + size_t(lanes.rank()) * step.elements * element_bytes;
        TANDEM_NCCL_CHECK(comm, ncclScatter(address_of(buffers, step.from, element_bytes), own, step.elements, type,
                                            step.root, comm, stream));
        await_communicator(comm, lanes.rules(), "copy-engine scatter from rank " + std::to_string(step.root));
        break;
      }
      case PlanStep::Op::Push:
      case PlanStep::Op::Pull:
        copy_with_peers(lanes, step, buffers, element_bytes, stream);
        break;
    }
  }
}

namespace {

void run_windowed(const CopyEngineLanes& lanes, Collective kind, const void* send, void* recv, void* scratch,
                  size_t count, DType dtype, cudaStream_t stream) {
  CopyEngineCall call;
  call.kind = kind;
  call.send = send;
  call.recv = recv;
  call.count = count;
  call.dtype = to_nccl(dtype);
  call.stream = stream;
  copy_engine_collective(lanes, call, scratch);
}

}  // namespace

void copy_engine_reduce_scatter(const CopyEngineLanes& lanes, const void* send, void* recv, void* scratch,
                                size_t recv_count, DType dtype, cudaStream_t stream) {
  run_windowed(lanes, Collective::ReduceScatter, send, recv, scratch, recv_count, dtype, stream);
}

void copy_engine_all_reduce(const CopyEngineLanes& lanes, const void* send, void* recv, void* scratch, size_t count,
                            DType dtype, cudaStream_t stream) {
  run_windowed(lanes, Collective::AllReduce, send, recv, scratch, count, dtype, stream);
}

void copy_engine_all_gather(const CopyEngineLanes& lanes, const void* send, void* recv, size_t send_count, DType dtype,
                            cudaStream_t stream) {
  run_windowed(lanes, Collective::AllGather, send, recv, nullptr, send_count, dtype, stream);
}

void copy_engine_all_to_all(const CopyEngineLanes& lanes, const void* send, void* recv, size_t count, DType dtype,
                            cudaStream_t stream) {
  run_windowed(lanes, Collective::AllToAll, send, recv, nullptr, count, dtype, stream);
}

}  // namespace tandem
