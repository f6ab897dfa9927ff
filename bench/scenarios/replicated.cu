#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/values.cuh"
#include "scenarios/replicated.h"
#include "scenarios/symmetric_windows.h"
#include "tandem/cuda_check.h"

namespace tandem::bench::scenarios {

namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

std::string gib(double bytes) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f GiB", bytes / double(1ull << 30));
  return buffer;
}

}  // namespace

Replica::Replica(RankContext& ctx, int rank, const ScenarioConfig& config, GemmEngine& gemms,
                 const Elementwise& kernels, Memory memory)
    : ctx_(ctx),
      rank_(rank),
      config_(config),
      gemms_(gemms),
      kernels_(kernels),
      elem_(static_cast<int64_t>(dtype_size(config.dtype))),
      program_(config.nranks),
      memory_(memory) {}

Replica::~Replica() {
  if (keep_allocations_) return;
  for (const auto& a : allocations_) {
    if (memory_ == Memory::NcclMemAlloc)
      ncclMemFree(a.ptr);
    else
      cudaFree(a.ptr);
  }
}

void* Replica::allocate(size_t bytes) {
  void* p = nullptr;
  if (memory_ == Memory::NcclMemAlloc)
    TANDEM_NCCL_CHECK(nullptr, ncclMemAlloc(&p, bytes));
  else
    TANDEM_CUDA_CHECK(cudaMalloc(&p, bytes));
  allocations_.push_back({p, int64_t(bytes)});
  allocated_bytes_ += int64_t(bytes);
  return p;
}

void* Replica::zeros(int64_t elements) {
  TANDEM_REQUIRE(elements > 0, "empty scenario buffer");
  const size_t bytes = size_t(elements) * size_t(elem_);
  void* p = allocate(bytes);
  TANDEM_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, ctx_.compute));
  return p;
}

void* Replica::random(int64_t elements, uint64_t tag, float lo, float hi) {
  void* p = zeros(elements);
  randomize(p, elements, tag, lo, hi);
  return p;
}

void Replica::randomize(void* p, int64_t elements, uint64_t tag, float lo, float hi) {
  fill_uniform(p, config_.dtype, elements, config_.seed, tag, lo, hi, ctx_.compute);
}

int32_t* Replica::upload(const std::vector<int32_t>& values) {
  const size_t bytes = values.size() * sizeof(int32_t);
  void* p = allocate(bytes);
  TANDEM_CUDA_CHECK(cudaMemcpy(p, values.data(), bytes, cudaMemcpyHostToDevice));
  return static_cast<int32_t*>(p);
}

void* Replica::at(const void* base, int64_t elements) const {
  return const_cast<char*>(static_cast<const char*>(base)) + elements * elem_;
}

uint64_t Replica::tag(const std::string& what, int layer, int micro, bool per_rank) const {
  uint64_t h = mix64(fnv1a(what) ^ (uint64_t(uint32_t(layer)) << 1));
  h = mix64(h ^ (uint64_t(uint32_t(micro)) << 17));
  return mix64(h ^ (per_rank ? uint64_t(rank_) + 1 : 0x5a5a5a5aull) << 7);
}

void Replica::append(Op op) {
  if (current_chain_ < 0) {
    program_.add(std::move(op));
    return;
  }
  auto& blocks = chains_[current_chain_];
  const bool ends_block = op.kind == Op::Kind::Collective;
  blocks.back().push_back(std::move(op));
  if (ends_block) blocks.emplace_back();
}

void Replica::compute(const std::string& name, std::vector<Access> access, std::function<void(cudaStream_t)> fn,
                      ShapedKernel* kernel, double flops) {
  if (kernel && std::find(used_kernels_.begin(), used_kernels_.end(), kernel) == used_kernels_.end())
    used_kernels_.push_back(kernel);
  Op op;
  op.kind = Op::Kind::Compute;
  op.name = name;
  op.access = std::move(access);
  op.enqueue = std::move(fn);
  op.flops = flops;
  append(std::move(op));
}

void Replica::gemm(const GemmDims& dims, const void* a, const void* b, void* c, bool accumulate) {
  const GemmOp& g = gemms_.get(dims);
  const float alpha = std::sqrt(3.0f / float(dims.k));
  const float beta = accumulate ? 1.0f : 0.0f;
  std::vector<Access> access = {reads(a, g.a_elements()), reads(b, g.b_elements()), writes(c, g.c_elements())};
  if (accumulate) access.push_back(reads(c, g.c_elements()));
  const GemmOp* op = &g;
  compute(
      dims.name, std::move(access), [=](cudaStream_t s) { op->run(a, b, c, alpha, beta, s); }, nullptr, dims.flops());
}

void Replica::add(const std::string& name, void* out, const void* a, const void* b, int64_t n) {
  const Elementwise* k = &kernels_;
  compute(
      name, {reads(a, n), reads(b, n), writes(out, n)}, [=](cudaStream_t s) { k->add(out, a, b, n, s); },
      kernels_.kernel(Elementwise::Kernel::Add));
}

void Replica::swiglu(const std::string& name, void* h, const void* g, int64_t rows, int64_t f) {
  const Elementwise* k = &kernels_;
  compute(
      name, {reads(g, rows * 2 * f), writes(h, rows * f)}, [=](cudaStream_t s) { k->swiglu(h, g, rows, f, s); },
      kernels_.kernel(Elementwise::Kernel::Swiglu));
}

void Replica::swiglu_backward(const std::string& name, void* dg, const void* g, const void* dh, int64_t rows,
                              int64_t f) {
  const Elementwise* k = &kernels_;
  compute(
      name, {reads(g, rows * 2 * f), reads(dh, rows * f), writes(dg, rows * 2 * f)},
      [=](cudaStream_t s) { k->swiglu_backward(dg, g, dh, rows, f, s); },
      kernels_.kernel(Elementwise::Kernel::SwigluBackward));
}

void Replica::attention(const std::string& name, void* a, const void* qkv, int64_t rows, const AttentionDims& d) {
  const Elementwise* k = &kernels_;
  compute(
      name, {reads(qkv, rows * d.qkv_width()), writes(a, rows * d.q_width())},
      [=](cudaStream_t s) { k->attention(a, qkv, rows, d, s); }, kernels_.kernel(Elementwise::Kernel::Attention));
}

void Replica::attention_backward(const std::string& name, void* dqkv, const void* qkv, const void* da, int64_t rows,
                                 const AttentionDims& d) {
  const Elementwise* k = &kernels_;
  compute(
      name, {reads(qkv, rows * d.qkv_width()), reads(da, rows * d.q_width()), writes(dqkv, rows * d.qkv_width())},
      [=](cudaStream_t s) { k->attention_backward(dqkv, qkv, da, rows, d, s); },
      kernels_.kernel(Elementwise::Kernel::AttentionBackward));
}

void Replica::gather_rows(const std::string& name, void* out, const void* in, int64_t in_rows, const int32_t* row_of,
                          const void* scale, int64_t rows, int64_t width) {
  const Elementwise* k = &kernels_;
  std::vector<Access> access = {reads(in, in_rows * width), writes(out, rows * width)};
  if (scale) access.push_back(reads(scale, rows));
  compute(
      name, std::move(access), [=](cudaStream_t s) { k->gather_rows(out, in, row_of, scale, rows, width, s); },
      kernels_.kernel(Elementwise::Kernel::GatherRows));
}

void Replica::combine_rows(const std::string& name, void* out, const void* residual, const void* in, int64_t in_rows,
                           const int32_t* slots, const void* scale, int64_t rows, int k, int64_t width) {
  const Elementwise* kern = &kernels_;
  std::vector<Access> access = {reads(residual, rows * width), reads(in, in_rows * width), writes(out, rows * width)};
  if (scale) access.push_back(reads(scale, in_rows));
  compute(
      name, std::move(access),
      [=](cudaStream_t s) { kern->combine_rows(out, residual, in, slots, scale, rows, k, width, s); },
      kernels_.kernel(Elementwise::Kernel::CombineRows));
}

void Replica::swap_blocks(const std::string& name, void* out, const void* in, int64_t outer, int64_t inner,
                          int64_t block) {
  const Elementwise* k = &kernels_;
  const int64_t n = outer * inner * block;
  compute(
      name, {reads(in, n), writes(out, n)}, [=](cudaStream_t s) { k->swap_blocks(out, in, outer, inner, block, s); },
      kernels_.kernel(Elementwise::Kernel::SwapBlocks));
}

void Replica::collective(const std::string& name, CollectiveCall::Kind kind, const void* send, void* recv,
                         int64_t count) {
  Op op;
  op.kind = Op::Kind::Collective;
  op.name = name;
  op.call.kind = kind;
  op.call.send = send;
  op.call.recv = recv;
  op.call.count = count;
  op.call.dtype = config_.dtype;
  if (kind == CollectiveCall::Kind::AllToAll)
    TANDEM_REQUIRE(send != recv, "all-to-all '" + name + "' cannot run in place");
  append(std::move(op));
}

void Replica::begin_interleave(int chains) {
  TANDEM_REQUIRE(current_chain_ < 0 && chains >= 1, "begin_interleave: already interleaving");
  chains_.assign(chains, std::vector<std::vector<Op>>(1));
  current_chain_ = 0;
}

void Replica::select_chain(int chain) {
  TANDEM_REQUIRE(chain >= 0 && chain < static_cast<int>(chains_.size()), "select_chain: no such chain");
  current_chain_ = chain;
}

void Replica::end_interleave() {
  TANDEM_REQUIRE(current_chain_ >= 0, "end_interleave without begin_interleave");
  current_chain_ = -1;
  size_t blocks = 0;
  for (const auto& c : chains_) blocks = std::max(blocks, c.size());
  // Block k of every chain, then block k + 1: while micro-batch m's collective of block k runs,
  // micro-batch m + 1's block k computes.
  for (size_t k = 0; k < blocks; ++k)
    for (auto& c : chains_)
      if (k < c.size())
        for (auto& op : c[k]) program_.add(std::move(op));
  chains_.clear();
}

void Replica::output(const std::string& name, const void* ptr, int64_t elements) {
  outputs_.push_back({name, ptr, elements});
}

void Replica::finalize() {
  TANDEM_REQUIRE(current_chain_ < 0, "finalize inside begin_interleave/end_interleave");
  program_.finalize();
}

ReplicatedScenario::ReplicatedScenario(const ScenarioConfig& config) : config_(config) {
  switch (config.dtype) {
    // Results go through chains of GEMMs and element-wise kernels whose roundings may differ by an
    // ulp from the reference's (cuBLASLt accumulates in another order), and a chain of layers grows
    // those differences: a few ulps of the type relative to each element, plus a fraction of the
    // output's RMS (a quarter in bf16, seen necessary on H200 for fsdp's 2-layer forward and
    // backward). A missing dependency reads NaN poison or stale data and misses by the order of the
    // RMS itself, so it is still caught.
    case DType::BF16:
      rtol_ = 1.0f / 32, rms_fraction_ = 1.0f / 4;
      break;
    case DType::FP16:
      rtol_ = 1.0f / 256, rms_fraction_ = 1.0f / 16;
      break;
    case DType::FP32:
      rtol_ = 1.0f / 4096, rms_fraction_ = 1.0f / 256;
      break;
  }
}

ReplicatedScenario::~ReplicatedScenario() {
  // Deregistration is collective and a destructor cannot meet the other ranks: buffers still in a
  // window (an error unwound past release_windows()) are left allocated rather than freed under
  // NCCL's mapping; destroying or aborting the communicator drops the windows.
  const bool registered = windows_ && windows_->holds_registrations();
  if (registered) windows_->abandon();
  if (registered && own_) own_->keep_allocations_on_destruction();
  if (!registered && copy_engine_scratch_) ncclMemFree(copy_engine_scratch_);
  for (auto& e : expected_) cudaFree(e.ref);
  if (wrong_) cudaFree(wrong_);
}

void ReplicatedScenario::setup(RankContext& ctx) {
  TANDEM_REQUIRE(ctx.nranks == config_.nranks, name() + " was configured for " + std::to_string(config_.nranks) +
                                                   " ranks but runs on " + std::to_string(ctx.nranks));
  kernels_ = std::make_unique<Elementwise>(config_.dtype);
  gemms_ = std::make_unique<GemmEngine>(ctx, config_.dtype, /*reference=*/false);
  // This rank's replica is the one NCCL sees: its buffers come from ncclMemAlloc so that
  // use_symmetric_windows() can register them.
  own_ = std::make_unique<Replica>(ctx, ctx.rank, config_, *gemms_, *kernels_, Replica::Memory::NcclMemAlloc);
  build(*own_);
  own_->finalize();
  TANDEM_REQUIRE(own_->program().collective_kinds() == collective(),
                 name() + " issues " + own_->program().collective_kinds() + ", not " + collective());
  executor_ = std::make_unique<Executor>(own_->program());
  TANDEM_CUDA_CHECK(cudaMalloc(&wrong_, sizeof(unsigned long long)));
  ctx.wait(ctx.compute, name() + " setup");
  compute_reference(ctx);
}

void ReplicatedScenario::compute_reference(RankContext& ctx) {
  // Every rank's replica lives on this device for the duration of the reference: check the room
  // first and say what to do, rather than fail inside an allocation.
  size_t free_bytes = 0, total_bytes = 0;
  TANDEM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  double outputs_bytes = 0;
  for (const auto& o : own_->outputs()) outputs_bytes += double(o.elements) * sizeof(float);
  const double need = double(own_->allocated_bytes()) * config_.nranks + outputs_bytes;
  if (need > 0.9 * double(free_bytes))
    TANDEM_THROW(name() + ": the reference holds every rank's replica on each GPU and needs " + gib(need) + ", " +
                 gib(double(free_bytes)) +
                 " free; check at a smaller size (--hidden, --seq, --layers) or run with "
                 "--check 0");

  GemmEngine reference_gemms(ctx, config_.dtype, /*reference=*/true);
  std::vector<std::unique_ptr<Replica>> replicas;
  std::vector<const Program*> programs;
  for (int r = 0; r < config_.nranks; ++r) {
    replicas.push_back(std::make_unique<Replica>(ctx, r, config_, reference_gemms, *kernels_));
    build(*replicas.back());
    replicas.back()->finalize();
    programs.push_back(&replicas.back()->program());
  }
  run_lockstep(ctx, programs, ctx.compute);

  const auto& mine = replicas[ctx.rank]->outputs();
  TANDEM_REQUIRE(mine.size() == own_->outputs().size(), name() + ": reference and run disagree on outputs");
  double* sum = nullptr;
  TANDEM_CUDA_CHECK(cudaMalloc(&sum, sizeof(double)));
  try {
    for (size_t i = 0; i < mine.size(); ++i) {
      const auto& got = own_->outputs()[i];
      TANDEM_REQUIRE(got.name == mine[i].name && got.elements == mine[i].elements,
                     name() + ": reference and run disagree on output '" + got.name + "'");
      Expected e{got.name, got.ptr, got.elements, nullptr, 0};
      TANDEM_CUDA_CHECK(cudaMalloc(&e.ref, size_t(e.elements) * sizeof(float)));
      expected_.push_back(e);
      widen(e.ref, mine[i].ptr, config_.dtype, e.elements, ctx.compute);
      TANDEM_CUDA_CHECK(cudaMemsetAsync(sum, 0, sizeof(double), ctx.compute));
      add_sum_of_squares(sum, e.ref, e.elements, ctx.compute);
      double host = 0;
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(&host, sum, sizeof(double), cudaMemcpyDeviceToHost, ctx.compute));
      ctx.wait(ctx.compute, name() + " reference RMS");
      const double rms = std::sqrt(host / double(e.elements));
      TANDEM_REQUIRE(
          std::isfinite(rms) && rms > 0,
          name() + ": reference output '" + e.name + "' is not finite and non-zero (RMS " + std::to_string(rms) + ")");
      expected_.back().atol = static_cast<float>(rms_fraction_ * rms);
    }
  } catch (...) {
    cudaFree(sum);
    throw;
  }
  cudaFree(sum);
  if (reference_gemms.reference_used_cublas())
    setup_note_ = name() +
                  ": GEMMs above 2^32 multiply-adds were computed with cuBLASLt in the reference too "
                  "(the naive kernel would take minutes); dependencies and collectives are still checked "
                  "against an independent computation";
}

uint64_t ReplicatedScenario::collective_bytes() const { return own_->program().collective_bytes(); }
double ReplicatedScenario::hbm_bytes() const { return own_->program().hbm_bytes(); }
double ReplicatedScenario::flops() const { return own_->program().flops(); }

void ReplicatedScenario::enqueue_iteration(RankContext& ctx, const ScenarioStreams& streams, ScenarioMode mode) {
  executor_->enqueue(ctx, streams, mode);
}

StreamBusy ReplicatedScenario::last_busy() { return executor_->busy(); }

void ReplicatedScenario::enqueue_sample(RankContext& ctx, cudaStream_t stream, bool collective) {
  executor_->enqueue_sample(ctx, stream, collective);
}

std::vector<double> ReplicatedScenario::time_operations(RankContext& ctx, const ScenarioStreams& streams,
                                                        ScenarioMode mode) {
  executor_->enqueue_timed(ctx, streams, mode);
  ctx.wait(streams.compute, name() + ": operations timed one by one");
  return executor_->operation_ms();
}

std::vector<TraceSpan> ReplicatedScenario::trace_iteration(RankContext& ctx, const ScenarioStreams& streams,
                                                           ScenarioMode mode) {
  executor_->enqueue_traced(ctx, streams, mode);
  ctx.wait(streams.compute, name() + ": traced iteration");
  const auto times = executor_->traced_ms();
  const Program& program = own_->program();
  std::vector<TraceSpan> spans;
  for (size_t i = 0; i < program.ops().size(); ++i) {
    const Op& op = program.ops()[i];
    TraceSpan span;
    span.name = op.name;
    span.collective = op.kind == Op::Kind::Collective;
    span.start_ms = times[i].first;
    span.end_ms = times[i].second;
    // One stream runs everything in a sequential iteration: nothing waits across streams.
    span.waits_for = mode == ScenarioMode::Full ? program.cross_wait(i) : -1;
    spans.push_back(span);
  }
  return spans;
}

double ReplicatedScenario::chain_ms(const std::vector<double>& operation_ms) const {
  return own_->program().chain_ms(operation_ms);
}

std::string ReplicatedScenario::use_symmetric_windows(RankContext& ctx, ncclComm_t comm, const CopyEngineLanes* lanes) {
  TANDEM_REQUIRE(own_ && executor_, name() + ": use_symmetric_windows before setup");
  TANDEM_REQUIRE(!lanes || (!lanes->comms().empty() && lanes->comms().front() == comm),
                 name() + ": copy-engine lane 0 must be the policy's communicator");
  // Decided from the program alone, so every rank returns the same answer and either all register
  // or none does.
  if (lanes) {
    const std::string why = copy_engine_refusal(own_->program());
    if (!why.empty()) return why;
  }
  if (!windows_) windows_ = std::make_unique<SymmetricWindows>(ctx.wait_rules());
  if (windows_->registered_on(comm)) return "";

  // Whole allocations, each once, in order of first use by a collective in program order: the same
  // buffers in the same order on every rank, as collective registration requires. A collective's
  // pointer may sit at an offset inside its window (a bucket, a slice); the offset is the same on
  // every rank, which is what NCCL_WIN_COLL_SYMMETRIC asks of the caller.
  std::vector<ByteRange> allocations;
  for (const auto& a : own_->allocations()) allocations.push_back({a.ptr, a.bytes});
  const auto used = containing_allocations(allocations, collective_ranges(own_->program()));
  std::vector<ByteRange> to_register;
  for (size_t i : used) to_register.push_back(allocations[i]);
  // Copy-engine reductions stage every rank's chunks in one scratch buffer, registered with the rest.
  CollectiveRoute route;
  route.all_to_all_api = true;
  route.lanes = lanes;
  const int64_t scratch_bytes = lanes ? copy_engine_scratch_bytes(own_->program()) : 0;
  if (scratch_bytes > 0) {
    if (!copy_engine_scratch_) TANDEM_NCCL_CHECK(nullptr, ncclMemAlloc(&copy_engine_scratch_, size_t(scratch_bytes)));
    to_register.push_back({copy_engine_scratch_, scratch_bytes});
    route.copy_engine_scratch = copy_engine_scratch_;
  }
  // Each lane's gathers reach the same buffers through its own communicator's windows; lane 0 is
  // `comm`. Lanes are per policy settings, so none of them has windows yet when `comm` has none.
  std::vector<ncclComm_t> comms{comm};
  if (lanes) comms = lanes->comms();
  for (ncclComm_t c : comms) windows_->add(c, to_register, name());
  executor_->set_route(comm, route);
  return "";
}

void ReplicatedScenario::release_windows(RankContext& ctx) {
  (void)ctx;
  // Every rank deregisters the same windows in the same (registration) order, each awaited, before
  // any buffer is freed (~Replica). After a failure the destructor still sees what remains
  // registered (SymmetricWindows::holds_registrations).
  if (!windows_) return;
  const std::vector<ncclComm_t> routed = windows_->communicators();
  windows_->release(name());
  for (ncclComm_t c : routed)
    if (executor_) executor_->clear_route(c);
}

std::vector<ShapedKernel*> ReplicatedScenario::shaped_kernels() { return own_->used_kernels(); }

void ReplicatedScenario::poison_outputs(cudaStream_t stream) {
  for (const auto& e : expected_) poison(const_cast<void*>(e.got), config_.dtype, e.elements, stream);
}

int64_t ReplicatedScenario::count_wrong(RankContext& ctx) {
  TANDEM_CUDA_CHECK(cudaMemsetAsync(wrong_, 0, sizeof(unsigned long long), ctx.compute));
  for (const auto& e : expected_)
    count_mismatches(wrong_, e.got, config_.dtype, e.ref, e.elements, rtol_, e.atol, ctx.compute);
  unsigned long long host = 0;
  TANDEM_CUDA_CHECK(cudaMemcpyAsync(&host, wrong_, sizeof(host), cudaMemcpyDeviceToHost, ctx.compute));
  ctx.wait(ctx.compute, name() + " check");
  return static_cast<int64_t>(host);
}

}  // namespace tandem::bench::scenarios
