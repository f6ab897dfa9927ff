#include <algorithm>
#include <cmath>

#include "harness/values.cuh"
#include "report/report.h"
#include "scenarios/replicated.h"
#include "tandem/cuda_check.h"
#include "tandem/enum_table.h"

namespace tandem::bench::scenarios {

namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

std::string gib(double bytes) { return format("%.1f GiB", bytes / double(1ull << 30)); }

// One collective of every replica (`calls[r]` is replica r's, all with the same kind, count and
// type), on `stream`, with an fp32 scratch `acc` of the count.
struct Replicas {
  const std::vector<const CollectiveCall*>& calls;
  float* acc;
  cudaStream_t stream;

  int n() const { return int(calls.size()); }
  DType dtype() const { return calls.front()->dtype; }
  int64_t count() const { return calls.front()->count; }
  size_t chunk_bytes() const { return size_t(count()) * dtype_size(dtype()); }
  const char* at(const void* base, int64_t chunk) const {
    return static_cast<const char*>(base) + size_t(chunk) * chunk_bytes();
  }
  char* at(void* base, int64_t chunk) const { return static_cast<char*>(base) + size_t(chunk) * chunk_bytes(); }
  void copy(void* to, const void* from) const {
    if (to != from) TANDEM_CUDA_CHECK(cudaMemcpyAsync(to, from, chunk_bytes(), cudaMemcpyDeviceToDevice, stream));
  }
};

void reference_all_reduce(const Replicas& x) {
  // Every input is read before any output is written: all-reduce may run in place.
  for (int s = 0; s < x.n(); ++s) accumulate(x.acc, x.calls[s]->send, x.dtype(), x.count(), s == 0, x.stream);
  for (int r = 0; r < x.n(); ++r) narrow(x.calls[r]->recv, x.dtype(), x.acc, x.count(), x.stream);
}

void reference_reduce_scatter(const Replicas& x) {
  // In place, rank r's output is chunk r of its own input, which no other sum reads.
  for (int r = 0; r < x.n(); ++r) {
    for (int s = 0; s < x.n(); ++s)
      accumulate(x.acc, x.at(x.calls[s]->send, r), x.dtype(), x.count(), s == 0, x.stream);
    narrow(x.calls[r]->recv, x.dtype(), x.acc, x.count(), x.stream);
  }
}

void reference_all_gather(const Replicas& x) {
  for (int r = 0; r < x.n(); ++r)
    for (int s = 0; s < x.n(); ++s) x.copy(x.at(x.calls[r]->recv, s), x.calls[s]->send);
}

void reference_all_to_all(const Replicas& x) {
  for (int r = 0; r < x.n(); ++r)
    for (int s = 0; s < x.n(); ++s) x.copy(x.at(x.calls[r]->recv, s), x.at(x.calls[s]->send, r));
}

// From rank 0, as the benchmark issues a broadcast (collective_call.cu).
void reference_broadcast(const Replicas& x) {
  for (int r = 0; r < x.n(); ++r) x.copy(x.calls[r]->recv, x.calls.front()->send);
}

// Each kind's reference, in Collective's order.
using Reference = void (*)(const Replicas&);
constexpr Reference kReferences[] = {reference_all_reduce, reference_reduce_scatter, reference_all_gather,
                                     reference_all_to_all, reference_broadcast};
static_assert(covers(kReferences, Collective::Broadcast), "one reference per Collective");

// Runs the programs of every rank's replica (all on this device) in lockstep on `stream`: each
// compute operation for every replica, then each collective computed from all replicas' buffers
// (copies, and fp32 sums rounded once).
void run_lockstep(RankContext& ctx, const std::vector<const Program*>& replicas, cudaStream_t stream) {
  TANDEM_REQUIRE(!replicas.empty(), "no replicas");
  const size_t count = replicas.front()->ops().size();
  for (const auto* p : replicas) TANDEM_REQUIRE(p->ops().size() == count, "replicas built different programs");
  int64_t scratch_elements = 0;
  for (const auto& op : replicas.front()->ops())
    if (op.kind == Op::Kind::Collective) scratch_elements = std::max(scratch_elements, op.call.count);
  float* acc = nullptr;
  if (scratch_elements) TANDEM_CUDA_CHECK(cudaMalloc(&acc, size_t(scratch_elements) * sizeof(float)));
  try {
    for (size_t i = 0; i < count; ++i) {
      const Op& first = replicas.front()->ops()[i];
      if (first.kind == Op::Kind::Compute) {
        for (const auto* p : replicas) p->ops()[i].enqueue(stream);
        continue;
      }
      std::vector<const CollectiveCall*> calls;
      for (const auto* p : replicas) {
        const Op& op = p->ops()[i];
        TANDEM_REQUIRE(
            op.kind == Op::Kind::Collective && op.call.kind == first.call.kind && op.call.count == first.call.count,
            "replicas disagree on collective '" + first.name + "'");
        calls.push_back(&op.call);
      }
      table_entry(kReferences, first.call.kind)(Replicas{calls, acc, stream});
    }
    ctx.wait(stream, "scenario reference");
  } catch (...) {
    cudaFree(acc);
    throw;
  }
  cudaFree(acc);
}

}  // namespace

Replica::Replica(RankContext& ctx, int rank, const ScenarioConfig& config, GemmEngine& gemms,
                 const Elementwise& kernels, WindowMemory* memory)
    : ctx_(ctx),
      rank_(rank),
      config_(config),
      gemms_(gemms),
      kernels_(kernels),
      elem_(static_cast<int64_t>(dtype_size(config.dtype))),
      program_(config.nranks),
      memory_(memory) {}

Replica::~Replica() {
  for (void* p : device_buffers_) cudaFree(p);
}

void* Replica::allocate(size_t bytes) {
  void* p = nullptr;
  if (memory_) {
    p = memory_->allocate(bytes);
  } else {
    TANDEM_CUDA_CHECK(cudaMalloc(&p, bytes));
    device_buffers_.push_back(p);
  }
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
                      ShapedKernel* kernel) {
  if (kernel && std::find(used_kernels_.begin(), used_kernels_.end(), kernel) == used_kernels_.end())
    used_kernels_.push_back(kernel);
  Op op;
  op.kind = Op::Kind::Compute;
  op.name = name;
  for (const auto& a : access) op.hbm_bytes += double(a.bytes);
  op.access = std::move(access);
  op.enqueue = std::move(fn);
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
      dims.name, std::move(access), [=](cudaStream_t s) { op->run(a, b, c, alpha, beta, s); }, nullptr);
}

void Replica::elementwise(const std::string& name, std::vector<Access> access, Elementwise::Kernel kernel,
                          std::function<void(const Elementwise&, cudaStream_t)> fn) {
  const Elementwise* k = &kernels_;
  compute(
      name, std::move(access), [k, fn = std::move(fn)](cudaStream_t s) { fn(*k, s); }, kernels_.kernel(kernel));
}

void Replica::add(const std::string& name, void* out, const void* a, const void* b, int64_t n) {
  elementwise(name, {reads(a, n), reads(b, n), writes(out, n)}, Elementwise::Kernel::Add,
              [=](const Elementwise& k, cudaStream_t s) { k.add(out, a, b, n, s); });
}

void Replica::swiglu(const std::string& name, void* h, const void* g, int64_t rows, int64_t f) {
  elementwise(name, {reads(g, rows * 2 * f), writes(h, rows * f)}, Elementwise::Kernel::Swiglu,
              [=](const Elementwise& k, cudaStream_t s) { k.swiglu(h, g, rows, f, s); });
}

void Replica::swiglu_backward(const std::string& name, void* dg, const void* g, const void* dh, int64_t rows,
                              int64_t f) {
  elementwise(name, {reads(g, rows * 2 * f), reads(dh, rows * f), writes(dg, rows * 2 * f)},
              Elementwise::Kernel::SwigluBackward,
              [=](const Elementwise& k, cudaStream_t s) { k.swiglu_backward(dg, g, dh, rows, f, s); });
}

void Replica::attention(const std::string& name, void* a, const void* qkv, int64_t rows, const AttentionDims& d) {
  elementwise(name, {reads(qkv, rows * d.qkv_width()), writes(a, rows * d.q_width())}, Elementwise::Kernel::Attention,
              [=](const Elementwise& k, cudaStream_t s) { k.attention(a, qkv, rows, d, s); });
}

void Replica::attention_backward(const std::string& name, void* dqkv, const void* qkv, const void* da, int64_t rows,
                                 const AttentionDims& d) {
  elementwise(name,
              {reads(qkv, rows * d.qkv_width()), reads(da, rows * d.q_width()), writes(dqkv, rows * d.qkv_width())},
              Elementwise::Kernel::AttentionBackward,
              [=](const Elementwise& k, cudaStream_t s) { k.attention_backward(dqkv, qkv, da, rows, d, s); });
}

void Replica::gather_rows(const std::string& name, void* out, const void* in, int64_t in_rows, const int32_t* row_of,
                          const void* scale, int64_t rows, int64_t width) {
  std::vector<Access> access = {reads(in, in_rows * width), writes(out, rows * width)};
  if (scale) access.push_back(reads(scale, rows));
  elementwise(name, std::move(access), Elementwise::Kernel::GatherRows,
              [=](const Elementwise& k, cudaStream_t s) { k.gather_rows(out, in, row_of, scale, rows, width, s); });
}

void Replica::combine_rows(const std::string& name, void* out, const void* residual, const void* in, int64_t in_rows,
                           const int32_t* slots, const void* scale, int64_t rows, int k, int64_t width) {
  std::vector<Access> access = {reads(residual, rows * width), reads(in, in_rows * width), writes(out, rows * width)};
  if (scale) access.push_back(reads(scale, in_rows));
  elementwise(name, std::move(access), Elementwise::Kernel::CombineRows, [=](const Elementwise& e, cudaStream_t s) {
    e.combine_rows(out, residual, in, slots, scale, rows, k, width, s);
  });
}

void Replica::swap_blocks(const std::string& name, void* out, const void* in, int64_t outer, int64_t inner,
                          int64_t block) {
  const int64_t n = outer * inner * block;
  elementwise(name, {reads(in, n), writes(out, n)}, Elementwise::Kernel::SwapBlocks,
              [=](const Elementwise& k, cudaStream_t s) { k.swap_blocks(out, in, outer, inner, block, s); });
}

void Replica::collective(const std::string& name, Collective kind, const void* send, void* recv, int64_t count) {
  Op op;
  op.kind = Op::Kind::Collective;
  op.name = name;
  op.call = {kind, send, recv, count, config_.dtype};
  if (kind == Collective::AllToAll) TANDEM_REQUIRE(send != recv, "all-to-all '" + name + "' cannot run in place");
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
  for (auto& e : expected_) cudaFree(e.ref);
  if (wrong_) cudaFree(wrong_);
}

void ReplicatedScenario::setup(RankContext& ctx) {
  TANDEM_REQUIRE(ctx.nranks == config_.nranks, name() + " was configured for " + std::to_string(config_.nranks) +
                                                   " ranks but runs on " + std::to_string(ctx.nranks));
  kernels_ = std::make_unique<Elementwise>(config_.dtype);
  gemms_ = std::make_unique<GemmEngine>(ctx, config_.dtype, /*reference=*/false);
  // This rank's replica is the one NCCL sees: its buffers come from ncclMemAlloc, so that a
  // policy's windows can be registered on them.
  own_ = std::make_unique<Replica>(ctx, ctx.rank, config_, *gemms_, *kernels_, &memory_);
  build(*own_);
  own_->finalize();
  TANDEM_REQUIRE(own_->program().collective_kinds() == collective(),
                 name() + " issues " + own_->program().collective_kinds() + ", not " + collective());
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

void ReplicatedScenario::poison_outputs(cudaStream_t stream) {
  for (const auto& e : expected_) poison(const_cast<void*>(e.got), config_.dtype, size_t(e.elements), stream);
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
