#pragma once
// Megatron-style tensor parallelism, shared by tp-mlp and tp-attention: a column-parallel linear
// (each rank holds a slice of the output features), a local element-wise step, a row-parallel
// linear (each rank holds a slice of the input features) whose partial outputs are summed across
// ranks. Forward and backward over L layers and M micro-batches:
//
//   without sequence parallelism (all-reduce):
//     fwd  c = x . Wcol;  m = f(c);  p = m . Wrow;  all-reduce(p);  x' = x + p
//     bwd  dm = dy . Wrow^T;  dWrow += m^T dy;  dc = f'(c, dm);  dxp = dc . Wcol^T;
//          all-reduce(dxp);  dWcol += x^T dc (overlaps the all-reduce);  dx = dy + dxp
//   with sequence parallelism (reduce-scatter + all-gather; x and dy sharded by sequence):
//     fwd  all-gather(xs -> x);  ...;  reduce-scatter(p -> ps);  xs' = xs + ps
//     bwd  all-gather(dys -> dy);  ...;  reduce-scatter(dxp -> dxps);  dxs = dys + dxps
//
// Micro-batches are interleaved block by block (a block ends at each collective), so micro-batch
// m + 1's GEMMs run while micro-batch m's collective does.
#include "scenarios/layers.h"

namespace tandem::bench::scenarios {

class TensorParallel : public ReplicatedScenario {
 public:
  TensorParallel(const ScenarioConfig& c, bool attention)
      : ReplicatedScenario(c),
        attention_(attention),
        dims_(llama_dims(c.options.hidden, c.options.ffn, c.options.heads, c.options.kv_heads)) {
    const int tp = c.nranks;
    const auto& o = c.options;
    TANDEM_REQUIRE(o.micro_batches >= 1, "--micro-batches must be at least 1");
    TANDEM_REQUIRE(o.seq >= 1, "--seq must be positive");
    if (attention_) {
      const auto lin = layer_linears(dims_, tp);
      col_ = lin[kQkv];
      row_ = lin[kO];
    } else {
      TANDEM_REQUIRE(dims_.ffn % tp == 0, "tensor parallelism over " + std::to_string(tp) + " ranks needs --ffn (" +
                                              std::to_string(dims_.ffn) + ") divisible by " + std::to_string(tp));
      col_ = {"up_gate", dims_.hidden, 2 * dims_.ffn / tp, Parallel::Column};
      row_ = {"down", dims_.ffn / tp, dims_.hidden, Parallel::Row};
    }
    if (o.sequence_parallel)
      TANDEM_REQUIRE(o.seq % tp == 0, "--sequence-parallel needs --seq (" + std::to_string(o.seq) +
                                          ") divisible by the " + std::to_string(tp) + " rank(s)");
  }

  std::string name() const override { return attention_ ? "tp-attention" : "tp-mlp"; }
  std::string collective() const override {
    return config().options.sequence_parallel ? "all-gather+reduce-scatter" : "all-reduce";
  }
  int count() const override { return config().options.micro_batches; }

  std::string describe() const override {
    const auto& o = config().options;
    std::string model = " hidden=" + std::to_string(dims_.hidden) +
                        (attention_ ? " heads=" + std::to_string(dims_.heads) + "/" + std::to_string(dims_.kv_heads)
                                    : " ffn=" + std::to_string(dims_.ffn));
    return name() + " " + dtype_text() + " layers=" + std::to_string(o.layers) + model +
           " tokens=" + std::to_string(o.seq) + " micro-batches=" + std::to_string(o.micro_batches) +
           " tp=" + std::to_string(config().nranks) + ": forward + backward, " + col_.name + " column-parallel [" +
           std::to_string(col_.in) + " x " + std::to_string(col_.out) + "], " + row_.name + " row-parallel [" +
           std::to_string(row_.in) + " x " + std::to_string(row_.out) + "], " +
           (o.sequence_parallel ? std::string("sequence-parallel (all-gather + reduce-scatter") +
                                      (config().in_place ? ", all-gathers in place)" : ")")
                                : std::string("all-reduce"));
  }

 private:
  // The local step between the two linears and its backward.
  void local_forward(Replica& r, const std::string& n, void* m, const void* c, int64_t rows) const {
    if (attention_)
      r.attention(n, m, c, rows, attention_dims(dims_, r.nranks()));
    else
      r.swiglu(n, m, c, rows, row_.in);
  }
  void local_backward(Replica& r, const std::string& n, void* dc, const void* c, const void* dm, int64_t rows) const {
    if (attention_)
      r.attention_backward(n, dc, c, dm, rows, attention_dims(dims_, r.nranks()));
    else
      r.swiglu_backward(n, dc, c, dm, rows, row_.in);
  }

  void build(Replica& r) const override {
    const auto& o = r.options();
    const bool sp = o.sequence_parallel;
    const int L = o.layers, M = o.micro_batches, tp = r.nranks();
    const int64_t T = o.seq, H = dims_.hidden;
    const int64_t rows = sp ? T / tp : T;  // rows of the residual stream this rank holds
    using Kind = Collective;

    std::vector<const void*> wcol(L), wrow(L);
    std::vector<void*> dwcol(L), dwrow(L);
    for (int l = 0; l < L; ++l) {
      wcol[l] = r.random(col_.params(), r.tag("weight." + col_.name, l));
      wrow[l] = r.random(row_.params(), r.tag("weight." + row_.name, l));
      dwcol[l] = r.zeros(col_.params());
      dwrow[l] = r.zeros(row_.params());
    }
    // --in-place (with sequence parallelism): every all-gather's input is written straight into this
    // rank's chunk of the gathered buffer, as TransformerEngine's userbuffers arrange it, so NCCL has
    // no chunk of its own to copy. Out of place, NCCL's copy-engine all-gather copies that chunk with
    // an SM kernel before the peers' copies, and it waits for any kernel that holds every SM.
    const bool in_place = sp && config().in_place;
    const int64_t own_chunk = int64_t(r.rank()) * rows * H;
    auto shard_of = [&](void* gathered) { return in_place ? r.at(gathered, own_chunk) : r.zeros(rows * H); };

    // Per micro-batch: the residual stream at every layer boundary (x[0] is the input; without
    // sequence parallelism it is the same on every rank; x[L] the output), saved activations,
    // gradients. full[l] is x[l] gathered, dyfull[l] the gradient layer l's backward gathers.
    struct Micro {
      std::vector<void*> x, full, c, m, dx, dyfull;
      void *dout, *p, *ps, *dm, *dc, *dxp, *dxps;
    };
    std::vector<Micro> mb(M);
    for (int k = 0; k < M; ++k) {
      Micro& u = mb[k];
      for (int l = 0; l < L; ++l) {
        void* full = sp ? r.zeros(T * H) : nullptr;
        u.x.push_back(sp ? shard_of(full) : r.zeros(rows * H));
        u.full.push_back(sp ? full : u.x[l]);
        u.c.push_back(r.zeros(T * col_.out));
        u.m.push_back(r.zeros(T * row_.in));
        // Out of place, the layers' backward gathers share one buffer.
        if (sp) u.dyfull.push_back(in_place || l == 0 ? r.zeros(T * H) : u.dyfull[0]);
      }
      u.x.push_back(r.zeros(rows * H));
      r.randomize(u.x[0], rows * H, r.tag("x0", -1, k, /*per_rank=*/sp));
      // dx[l] is layer l - 1's backward input: in place, it lies in its chunk of dyfull[l - 1].
      for (int l = 0; l < L; ++l) u.dx.push_back(l > 0 && sp ? shard_of(u.dyfull[l - 1]) : r.zeros(rows * H));
      u.dout = sp ? shard_of(u.dyfull[L - 1]) : r.zeros(rows * H);
      r.randomize(u.dout, rows * H, r.tag("dout", -1, k, /*per_rank=*/sp));
      u.p = r.zeros(T * H);
      u.ps = sp ? r.zeros(rows * H) : u.p;
      u.dm = r.zeros(T * row_.in);
      u.dc = r.zeros(T * col_.out);
      u.dxp = r.zeros(T * H);
      u.dxps = sp ? r.zeros(rows * H) : u.dxp;
    }

    r.begin_interleave(M);
    for (int k = 0; k < M; ++k) {
      r.select_chain(k);
      Micro& u = mb[k];
      const std::string mk = "mb" + std::to_string(k) + ".";
      for (int l = 0; l < L; ++l) {
        const std::string n = mk + "L" + std::to_string(l) + ".";
        if (sp) r.collective(n + "all-gather x", Kind::AllGather, u.x[l], u.full[l], rows * H);
        r.gemm(forward_gemm(col_, T), u.full[l], wcol[l], u.c[l]);
        local_forward(r, n + "local", u.m[l], u.c[l], T);
        r.gemm(forward_gemm(row_, T), u.m[l], wrow[l], u.p);
        if (sp)
          r.collective(n + "reduce-scatter out", Kind::ReduceScatter, u.p, u.ps, rows * H);
        else
          r.collective(n + "all-reduce out", Kind::AllReduce, u.p, u.p, T * H);
        r.add(n + "residual", u.x[l + 1], u.x[l], u.ps, rows * H);
      }
      for (int l = L - 1; l >= 0; --l) {
        const std::string n = mk + "L" + std::to_string(l) + ".bwd.";
        const void* dys = l == L - 1 ? u.dout : u.dx[l + 1];
        const void* dy = dys;
        if (sp) {
          r.collective(n + "all-gather dy", Kind::AllGather, dys, u.dyfull[l], rows * H);
          dy = u.dyfull[l];
        }
        const bool acc = k > 0;  // gradients accumulate over micro-batches
        r.gemm(dgrad_gemm(row_, T), dy, wrow[l], u.dm);
        r.gemm(wgrad_gemm(row_, T), u.m[l], dy, dwrow[l], acc);
        local_backward(r, n + "local", u.dc, u.c[l], u.dm, T);
        r.gemm(dgrad_gemm(col_, T), u.dc, wcol[l], u.dxp);
        if (sp)
          r.collective(n + "reduce-scatter dx", Kind::ReduceScatter, u.dxp, u.dxps, rows * H);
        else
          r.collective(n + "all-reduce dx", Kind::AllReduce, u.dxp, u.dxp, T * H);
        // Megatron overlaps the input-gradient reduction with the column-parallel weight gradient.
        r.gemm(wgrad_gemm(col_, T), u.full[l], u.dc, dwcol[l], acc);
        r.add(n + "residual", u.dx[l], dys, u.dxps, rows * H);
      }
    }
    r.end_interleave();

    for (int k = 0; k < M; ++k) {
      r.output("mb" + std::to_string(k) + ".out", mb[k].x[L], rows * H);
      r.output("mb" + std::to_string(k) + ".dx", mb[k].dx[0], rows * H);
    }
    for (int l = 0; l < L; ++l) {
      r.output("L" + std::to_string(l) + "." + col_.name + ".grad", dwcol[l], col_.params());
      r.output("L" + std::to_string(l) + "." + row_.name + ".grad", dwrow[l], row_.params());
    }
  }

  bool attention_;
  ModelDims dims_;
  Linear col_, row_;
};

}  // namespace tandem::bench::scenarios
