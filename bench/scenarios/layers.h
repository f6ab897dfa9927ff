#pragma once
// A transformer layer's forward and backward pass as scenario operations, shared by dp-backward and
// fsdp (whole layers), and the Megatron tensor-parallel halves (column- then row-parallel) shared by
// tp-mlp and tp-attention.
//
// Layer (pre-norm Llama without the norms, which are element-wise and cheap):
//   qkv = x . Wqkv;  a = attention(qkv);  mid = x + a . Wo;
//   g = mid . Wup_gate;  h = swiglu(g);  out = mid + h . Wdown
// The attention core is a stand-in (see Elementwise::attention): it keeps the qkv -> a dependency
// but none of FlashAttention's cost.
#include <functional>

#include "scenarios/model_shapes.h"
#include "scenarios/replicated.h"
#include "tandem/error.h"

namespace tandem::bench::scenarios {

// Index of each linear in layer_linears() order.
enum LinearIndex { kQkv = 0, kO = 1, kUpGate = 2, kDown = 3 };

struct LayerWeights {
  const void* w[4] = {};
};
struct LayerGrads {
  void* w[4] = {};
};
// What the forward pass saves for the backward pass.
struct LayerActivations {
  void* x = nullptr;    // [T x H] layer input
  void* qkv = nullptr;  // [T x Q]
  void* a = nullptr;    // [T x H] attention output
  void* mid = nullptr;  // [T x H] residual stream between attention and MLP
  void* g = nullptr;    // [T x 2F] gate | up
  void* h = nullptr;    // [T x F] swiglu output
};

inline AttentionDims attention_dims(const ModelDims& d, int tp = 1) {
  return {d.heads / tp, d.kv_heads / tp, d.head_dim};
}

// Saved activations filled with random values: a backward pass without its forward (dp-backward).
inline LayerActivations random_activations(Replica& r, const ModelDims& d, int64_t tokens, int layer) {
  LayerActivations a;
  a.x = r.random(tokens * d.hidden, r.tag("act.x", layer));
  a.qkv = r.random(tokens * d.qkv_dim(), r.tag("act.qkv", layer));
  a.a = r.random(tokens * d.hidden, r.tag("act.a", layer));
  a.mid = r.random(tokens * d.hidden, r.tag("act.mid", layer));
  a.g = r.random(tokens * 2 * d.ffn, r.tag("act.g", layer));
  a.h = r.random(tokens * d.ffn, r.tag("act.h", layer));
  return a;
}

// Buffers a layer's forward or backward pass overwrites; shared by all layers (one stream).
struct LayerScratch {
  void *o, *down, *dh, *dg, *dmid_mlp, *dmid, *da, *dqkv, *dx_attn;
  LayerScratch(Replica& r, const ModelDims& d, int64_t tokens) {
    const int64_t th = tokens * d.hidden;
    o = r.zeros(th);
    down = r.zeros(th);
    dh = r.zeros(tokens * d.ffn);
    dg = r.zeros(tokens * 2 * d.ffn);
    dmid_mlp = r.zeros(th);
    dmid = r.zeros(th);
    da = r.zeros(th);
    dqkv = r.zeros(tokens * d.qkv_dim());
    dx_attn = r.zeros(th);
  }
};

// Forward of one whole layer: fills `act` (act.x must hold the input) and writes `out`.
inline void layer_forward(Replica& r, const ModelDims& d, int64_t tokens, const LayerWeights& w,
                          const LayerActivations& act, void* out, const LayerScratch& s, int layer) {
  const auto lin = layer_linears(d);
  const std::string L = "L" + std::to_string(layer) + ".";
  const int64_t th = tokens * d.hidden;
  r.gemm(forward_gemm(lin[kQkv], tokens), act.x, w.w[kQkv], act.qkv);
  r.attention(L + "attention", act.a, act.qkv, tokens, attention_dims(d));
  r.gemm(forward_gemm(lin[kO], tokens), act.a, w.w[kO], s.o);
  r.add(L + "residual.attn", act.mid, act.x, s.o, th);
  r.gemm(forward_gemm(lin[kUpGate], tokens), act.mid, w.w[kUpGate], act.g);
  r.swiglu(L + "swiglu", act.h, act.g, tokens, d.ffn);
  r.gemm(forward_gemm(lin[kDown], tokens), act.h, w.w[kDown], s.down);
  r.add(L + "residual.mlp", out, act.mid, s.down, th);
}

// Backward of one whole layer from dout to dx, writing the four weight gradients (accumulating when
// asked). after_wgrad(i) runs right after the wgrad GEMM of linear i is emitted, in the order down,
// up_gate, o, qkv: where a data-parallel scenario hooks its gradient reduction.
inline void layer_backward(Replica& r, const ModelDims& d, int64_t tokens, const LayerWeights& w,
                           const LayerActivations& act, const void* dout, const LayerGrads& grads, bool accumulate,
                           void* dx, const LayerScratch& s, int layer,
                           const std::function<void(int)>& after_wgrad = nullptr) {
  const auto lin = layer_linears(d);
  const std::string L = "L" + std::to_string(layer) + ".";
  const int64_t th = tokens * d.hidden;
  auto hook = [&](int i) {
    if (after_wgrad) after_wgrad(i);
  };
  // MLP: the critical path (dgrad) first, then the weight gradient, as autograd does per linear.
  r.gemm(dgrad_gemm(lin[kDown], tokens), dout, w.w[kDown], s.dh);
  r.gemm(wgrad_gemm(lin[kDown], tokens), act.h, dout, grads.w[kDown], accumulate);
  hook(kDown);
  r.swiglu_backward(L + "swiglu.backward", s.dg, act.g, s.dh, tokens, d.ffn);
  r.gemm(dgrad_gemm(lin[kUpGate], tokens), s.dg, w.w[kUpGate], s.dmid_mlp);
  r.gemm(wgrad_gemm(lin[kUpGate], tokens), act.mid, s.dg, grads.w[kUpGate], accumulate);
  hook(kUpGate);
  r.add(L + "residual.mlp.backward", s.dmid, dout, s.dmid_mlp, th);
  // Attention.
  r.gemm(dgrad_gemm(lin[kO], tokens), s.dmid, w.w[kO], s.da);
  r.gemm(wgrad_gemm(lin[kO], tokens), act.a, s.dmid, grads.w[kO], accumulate);
  hook(kO);
  r.attention_backward(L + "attention.backward", s.dqkv, act.qkv, s.da, tokens, attention_dims(d));
  r.gemm(dgrad_gemm(lin[kQkv], tokens), s.dqkv, w.w[kQkv], s.dx_attn);
  r.gemm(wgrad_gemm(lin[kQkv], tokens), act.x, s.dqkv, grads.w[kQkv], accumulate);
  hook(kQkv);
  r.add(L + "residual.attn.backward", dx, s.dmid, s.dx_attn, th);
}

}  // namespace tandem::bench::scenarios
