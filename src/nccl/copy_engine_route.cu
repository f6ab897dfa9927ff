// The copy-engine route (tandem/copy_engine_route.h): lazy lanes, one growable staging pool in
// symmetric windows, the program's buffers copied in and out around tandem's copy-engine
// collectives.
#include <algorithm>
#include <exception>
#include <utility>
#include <vector>

#include "tandem/communicators.h"
#include "tandem/copy_engine_route.h"
#include "tandem/cuda_check.h"
#include "tandem/error.h"
#include "tandem/streams.h"
#include "tandem/symmetric_windows.h"

namespace tandem {
namespace {

// Every part of the pool starts on this boundary: the vector sum kernel wants 16-byte alignment,
// and NCCL's symmetric kernels are fastest on aligned buffers.
constexpr size_t kAlignment = 4096;
// The pool grows in steps of this much at least, so a program whose sizes creep up a little at a
// time does not re-register on every call.
constexpr size_t kGrowthGranularity = size_t(2) << 20;

size_t align_up(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

char* at(void* base, size_t bytes) { return static_cast<char*>(base) + bytes; }

// The communicator's device is current for the scope: a program that drives several GPUs from one
// thread may have another one current, and ncclMemAlloc and the staging copies use the current one.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) TANDEM_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceScope() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};

// Where one call's staging input, staging output and scratch lie in the pool. Computed from the
// call's arguments alone, so every rank lays the pool out alike: NCCL_WIN_COLL_SYMMETRIC wants a
// buffer at the same offset of its window on every rank.
struct Layout {
  size_t input = 0, output = 0, scratch = 0;  // offsets
  size_t bytes = 0;                           // the pool size the call needs
};

Layout layout_for(size_t input_bytes, size_t output_bytes, size_t scratch_bytes) {
  Layout l;
  l.input = 0;
  l.output = align_up(input_bytes, kAlignment);
  l.scratch = l.output + align_up(output_bytes, kAlignment);
  l.bytes = l.scratch + align_up(scratch_bytes, kAlignment);
  return l;
}

}  // namespace

struct CopyEngineRoute::State {
  ncclComm_t parent = nullptr;
  WaitRules rules;
  ncclConfig_t config{};  // the lanes': the caller's base, CTA policy zero, non-blocking
  int rank = 0;
  int nranks = 0;
  int device = 0;

  // Created on first use: lane 0 is split from the parent (the parent keeps its own settings and
  // never gets windows, so the program's other collectives keep their NCCL paths); the further
  // lanes from lane 0.
  ncclComm_t lane0 = nullptr;
  std::unique_ptr<CopyEngineLanes> lanes;

  // The staging pool and its windows; the caller's window_buffer() allocations and theirs apart,
  // because growing the pool releases every window of its SymmetricWindows and those buffers must
  // stay valid.
  std::unique_ptr<SymmetricWindows> pool_windows, buffer_windows;
  void* pool = nullptr;
  size_t pool_bytes = 0;
  std::vector<ByteRange> buffers;  // from window_buffer()

  // Calls share the staging buffers: `done` marks the end of the last call, on `last_stream`;
  // `fence` is a private stream that waits for it, so a wait for the last use (before the pool is
  // freed) waits for nothing of the program's.
  cudaEvent_t done = nullptr;
  cudaStream_t last_stream = nullptr;
  bool used = false;
  std::unique_ptr<PriorityStream> fence;

  bool failed = false;
  CopyEngineRouteStats stats;

  void ensure_lanes() {
    if (lanes) return;
    // split_communicator awaits the parent before reading the new communicator: with a non-blocking
    // parent NCCL writes it only once the split is complete.
    lane0 = split_communicator(parent, rank, config, rules, "copy-engine lane 0");
    lanes = std::make_unique<CopyEngineLanes>(lane0, config, rules);
    pool_windows = std::make_unique<SymmetricWindows>(rules);
    buffer_windows = std::make_unique<SymmetricWindows>(rules);
    fence = std::make_unique<PriorityStream>(stream_priority_range().least);
    TANDEM_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  }

  // Waits (bounded, under `rules`) until the last call's work on the staging buffers is over.
  void await_last_use(const std::string& step) {
    if (!used) return;
    TANDEM_CUDA_CHECK(cudaStreamWaitEvent(fence->get(), done, 0));
    await_stream(fence->get(), lanes->comms(), rules, step);
  }

  // Collective: every rank asks for the same size at the same call.
  void ensure_pool(size_t bytes) {
    if (bytes <= pool_bytes) return;
    const size_t grown = align_up(std::max(bytes, pool_bytes + pool_bytes / 2), kGrowthGranularity);
    if (pool) {
      // The staging copies and the collectives of the last call may still read or write the pool.
      await_last_use("copy-engine route: the last use of the staging pool");
      pool_windows->release("copy-engine staging pool");
      TANDEM_NCCL_CHECK(nullptr, ncclMemFree(pool));
      pool = nullptr;
      stats.pool_bytes -= int64_t(pool_bytes);
      pool_bytes = 0;
    }
    TANDEM_NCCL_CHECK(nullptr, ncclMemAlloc(&pool, grown));
    pool_bytes = grown;
    stats.pool_bytes += int64_t(grown);
    for (ncclComm_t c : lanes->comms()) pool_windows->add(c, {{pool, int64_t(grown)}}, "copy-engine staging pool");
    ++stats.registrations;
  }

  bool in_window(const void* p, size_t bytes) const {
    const auto* begin = static_cast<const char*>(p);
    for (const auto& b : buffers) {
      const auto* base = static_cast<const char*>(b.ptr);
      if (begin >= base && begin + bytes <= base + b.bytes) return true;
    }
    return false;
  }

  // Before a call's first enqueue: the lanes and a pool of `bytes`, and `stream` ordered after the
  // previous call.
  void begin(size_t bytes, cudaStream_t stream) {
    TANDEM_REQUIRE(!failed, "the copy-engine route failed earlier and was aborted");
    ensure_lanes();
    ensure_pool(bytes);
    // The previous call may have been on another stream and still be using the staging buffers.
    if (used && stream != last_stream) TANDEM_CUDA_CHECK(cudaStreamWaitEvent(stream, done, 0));
  }

  void end(cudaStream_t stream) {
    TANDEM_CUDA_CHECK(cudaEventRecord(done, stream));
    last_stream = stream;
    used = true;
    ++stats.calls;
  }

  void copy(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
    if (bytes == 0) return;
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
    stats.staged_bytes += int64_t(bytes);
  }

  // Runs `body` on the communicator's device and marks the route failed when it throws: a call that
  // stopped halfway leaves the ranks out of step, so no later call may run on these lanes.
  template <class F>
  void guarded(F&& body) {
    try {
      DeviceScope on(device);
      body();
    } catch (...) {
      failed = true;
      throw;
    }
  }
};

CopyEngineRoute::CopyEngineRoute(ncclComm_t parent, WaitRules rules, const ncclConfig_t& base_config)
    : state_(std::make_unique<State>()) {
  TANDEM_REQUIRE(parent != nullptr, "the copy-engine route needs a communicator");
  State& s = *state_;
  s.parent = parent;
  s.rules = std::move(rules);
  s.config = base_config;
  s.config.blocking = 0;
  s.config.CTAPolicy = NCCL_CTA_POLICY_ZERO;
  TANDEM_NCCL_CHECK(parent, ncclCommUserRank(parent, &s.rank));
  TANDEM_NCCL_CHECK(parent, ncclCommCount(parent, &s.nranks));
  TANDEM_NCCL_CHECK(parent, ncclCommCuDevice(parent, &s.device));
}

CopyEngineRoute::~CopyEngineRoute() {
  State& s = *state_;
  const bool healthy = !s.failed && std::uncaught_exceptions() == 0;
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
  if (previous != s.device) cudaSetDevice(s.device);
  if (healthy && s.lanes) {
    try {
      s.await_last_use("copy-engine route: the last call before closing");
      s.pool_windows->release("copy-engine staging pool");
      s.buffer_windows->release("copy-engine window buffers");
    } catch (const std::exception&) {
      // Deregistration is collective; a peer that is gone leaves the windows to the abort below.
      abort();
    }
  }
  if (s.failed) {
    // Aborted communicators drop their windows; the memory is left alone (a kernel of an aborted
    // collective could still touch it), which at worst leaks it.
    abort();
  } else {
    if (s.pool) ncclMemFree(s.pool);
    for (const auto& b : s.buffers) ncclMemFree(const_cast<void*>(b.ptr));
    if (s.lanes) s.lanes->close(true);
    s.lanes.reset();
    if (s.lane0) close_communicator(s.lane0, true, s.rules.timeout_s);
    if (s.done) cudaEventDestroy(s.done);
  }
  if (previous >= 0 && previous != s.device) cudaSetDevice(previous);
}

int CopyEngineRoute::rank() const { return state_->rank; }
int CopyEngineRoute::nranks() const { return state_->nranks; }

std::string CopyEngineRoute::refusal(CopyEngineCollective kind, size_t count, ncclDataType_t dtype,
                                     ncclRedOp_t op) const {
  if (count == 0) return std::string("an empty ") + to_string(kind) + " has nothing to move";
  return copy_engine_refusal(kind, count, state_->nranks, dtype, op);
}

void CopyEngineRoute::all_reduce(const void* send, void* recv, size_t count, ncclDataType_t dtype,
                                 cudaStream_t stream) {
  const std::string why = refusal(CopyEngineCollective::AllReduce, count, dtype);
  TANDEM_REQUIRE(why.empty(), why);
  State& s = *state_;
  const DType t = *from_nccl(dtype);
  const size_t bytes = count * dtype_size(t);
  // One staging buffer serves as input and output: the collective runs in place on it.
  const Layout l = layout_for(bytes, 0, copy_engine_scratch_bytes(CopyEngineCollective::AllReduce, count, t, s.nranks));
  s.guarded([&] {
    s.begin(l.bytes, stream);
    const bool send_in = s.in_window(send, bytes), recv_in = s.in_window(recv, bytes);
    void* out = recv_in ? recv : at(s.pool, l.input);
    const void* in = send_in ? send : out;
    if (!send_in) s.copy(out, send, bytes, stream);
    copy_engine_all_reduce(*s.lanes, in, out, at(s.pool, l.scratch), count, t, stream);
    if (!recv_in) s.copy(recv, out, bytes, stream);
    s.end(stream);
  });
}

void CopyEngineRoute::reduce_scatter(const void* send, void* recv, size_t recv_count, ncclDataType_t dtype,
                                     cudaStream_t stream) {
  const std::string why = refusal(CopyEngineCollective::ReduceScatter, recv_count, dtype);
  TANDEM_REQUIRE(why.empty(), why);
  State& s = *state_;
  const DType t = *from_nccl(dtype);
  const size_t out_bytes = recv_count * dtype_size(t), in_bytes = out_bytes * size_t(s.nranks);
  const Layout l = layout_for(in_bytes, out_bytes,
                              copy_engine_scratch_bytes(CopyEngineCollective::ReduceScatter, recv_count, t, s.nranks));
  s.guarded([&] {
    s.begin(l.bytes, stream);
    const bool send_in = s.in_window(send, in_bytes), recv_in = s.in_window(recv, out_bytes);
    const void* in = send_in ? send : at(s.pool, l.input);
    void* out = recv_in ? recv : at(s.pool, l.output);
    if (!send_in) s.copy(at(s.pool, l.input), send, in_bytes, stream);
    copy_engine_reduce_scatter(*s.lanes, in, out, at(s.pool, l.scratch), recv_count, t, stream);
    if (!recv_in) s.copy(recv, out, out_bytes, stream);
    s.end(stream);
  });
}

void CopyEngineRoute::all_gather(const void* send, void* recv, size_t send_count, ncclDataType_t dtype,
                                 cudaStream_t stream) {
  const std::string why = refusal(CopyEngineCollective::AllGather, send_count, dtype);
  TANDEM_REQUIRE(why.empty(), why);
  State& s = *state_;
  const DType t = *from_nccl(dtype);
  const size_t in_bytes = send_count * dtype_size(t), out_bytes = in_bytes * size_t(s.nranks);
  const Layout l = layout_for(0, out_bytes, 0);
  s.guarded([&] {
    s.begin(l.bytes, stream);
    const bool send_in = s.in_window(send, in_bytes), recv_in = s.in_window(recv, out_bytes);
    void* out = recv_in ? recv : at(s.pool, l.output);
    void* own = at(out, size_t(s.rank) * in_bytes);
    // A staged input goes straight into this rank's chunk of the output: the all-gather is then in
    // place, and NCCL's in-place copy-engine all-gather copies nothing locally.
    const void* in = send_in ? send : own;
    if (!send_in) s.copy(own, send, in_bytes, stream);
    copy_engine_all_gather(*s.lanes, in, out, send_count, t, stream);
    if (!recv_in) s.copy(recv, out, out_bytes, stream);
    s.end(stream);
  });
}

void CopyEngineRoute::all_to_all(const void* send, void* recv, size_t count, ncclDataType_t dtype,
                                 cudaStream_t stream) {
  const std::string why = refusal(CopyEngineCollective::AllToAll, count, dtype);
  TANDEM_REQUIRE(why.empty(), why);
  State& s = *state_;
  const DType t = *from_nccl(dtype);
  const size_t bytes = count * dtype_size(t) * size_t(s.nranks);
  const Layout l = layout_for(bytes, bytes, 0);
  s.guarded([&] {
    s.begin(l.bytes, stream);
    // In place (send == recv), the exchange would overwrite chunks it has still to send: both sides
    // are staged then.
    const bool in_place = send == recv;
    const bool send_in = !in_place && s.in_window(send, bytes), recv_in = !in_place && s.in_window(recv, bytes);
    const void* in = send_in ? send : at(s.pool, l.input);
    void* out = recv_in ? recv : at(s.pool, l.output);
    if (!send_in) s.copy(at(s.pool, l.input), send, bytes, stream);
    copy_engine_all_to_all(*s.lanes, in, out, count, t, stream);
    if (!recv_in) s.copy(recv, out, bytes, stream);
    s.end(stream);
  });
}

void* CopyEngineRoute::window_buffer(size_t bytes) {
  State& s = *state_;
  TANDEM_REQUIRE(bytes > 0, "a copy-engine window buffer needs at least one byte");
  void* p = nullptr;
  s.guarded([&] {
    TANDEM_REQUIRE(!s.failed, "the copy-engine route failed earlier and was aborted");
    s.ensure_lanes();
    TANDEM_NCCL_CHECK(nullptr, ncclMemAlloc(&p, bytes));
    s.buffers.push_back({p, int64_t(bytes)});
    s.stats.pool_bytes += int64_t(bytes);
    for (ncclComm_t c : s.lanes->comms()) s.buffer_windows->add(c, {{p, int64_t(bytes)}}, "copy-engine window buffer");
    ++s.stats.registrations;
  });
  return p;
}

CopyEngineRouteStats CopyEngineRoute::stats() const { return state_->stats; }

void CopyEngineRoute::abort() noexcept {
  State& s = *state_;
  s.failed = true;
  if (s.lanes) s.lanes->abort();
  if (s.lane0) abort_communicator(s.lane0);
  s.lane0 = nullptr;
  if (s.pool_windows) s.pool_windows->abandon();
  if (s.buffer_windows) s.buffer_windows->abandon();
}

}  // namespace tandem
