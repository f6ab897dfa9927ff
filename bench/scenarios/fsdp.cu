// Fully sharded data parallelism (PyTorch FSDP / ZeRO-3): each rank stores 1/n of every layer's
// parameters as one flat shard. Forward: all-gather a layer's parameters, compute it, drop them -
// the all-gather of layer l + 1 is enqueued before layer l's compute and overlaps it. Backward:
// all-gather again (prefetching layer l - 1 during layer l), compute, and reduce-scatter the
// layer's gradients to their owners while the next layer's backward runs. Parameters and gradients
// are double-buffered, as FSDP's prefetch limit of one layer implies; every rank has its own data.
#include "scenarios/layers.h"

namespace tandem::bench::scenarios {
namespace {

constexpr int64_t kAlign = 128;

class Fsdp final : public ReplicatedScenario {
 public:
  explicit Fsdp(const ScenarioConfig& c)
      : ReplicatedScenario(c), dims_(llama_dims(c.options.hidden, c.options.ffn, c.options.heads, c.options.kv_heads)) {
    TANDEM_REQUIRE(c.options.seq >= 1, "--seq must be positive");
    std::vector<int64_t> sizes;
    for (const auto& w : layer_linears(dims_)) sizes.push_back(w.params());
    flat_ = flat_layout(sizes, kAlign, c.nranks);
  }

  std::string name() const override { return "fsdp"; }
  std::string collective() const override { return "all-gather+reduce-scatter"; }
  int count() const override { return config().options.layers; }

  std::string describe() const override {
    const auto& o = config().options;
    return "fsdp " + dtype_text() + " layers=" + std::to_string(o.layers) + " hidden=" + std::to_string(dims_.hidden) +
           " ffn=" + std::to_string(dims_.ffn) + " heads=" + std::to_string(dims_.heads) + "/" +
           std::to_string(dims_.kv_heads) + " tokens=" + std::to_string(o.seq) + ": forward + backward, " +
           std::to_string(flat_.elements) + "-element flat parameter per layer in " + std::to_string(config().nranks) +
           " shards; all-gather next layer during this one, reduce-scatter gradients";
  }

 private:
  void build(Replica& r) const override {
    const auto& o = r.options();
    const int L = o.layers;
    const int64_t T = o.seq, H = dims_.hidden;
    using Kind = Collective;

    std::vector<void*> shard(L), grad_shard(L);
    for (int l = 0; l < L; ++l) {
      shard[l] = r.random(flat_.shard, r.tag("param.shard", l));
      grad_shard[l] = r.zeros(flat_.shard);
    }
    void* full[2] = {r.zeros(flat_.elements), r.zeros(flat_.elements)};
    void* grad_full[2] = {r.zeros(flat_.elements), r.zeros(flat_.elements)};
    auto weights_in = [&](void* flat) {
      LayerWeights w;
      for (int i = 0; i < 4; ++i) w.w[i] = r.at(flat, flat_.offsets[i]);
      return w;
    };
    auto grads_in = [&](void* flat) {
      LayerGrads g;
      for (int i = 0; i < 4; ++i) g.w[i] = r.at(flat, flat_.offsets[i]);
      return g;
    };
    auto gather = [&](int l, const std::string& when) {
      r.collective("L" + std::to_string(l) + " all-gather params (" + when + ")", Kind::AllGather, shard[l],
                   full[l % 2], flat_.shard);
    };

    // x[l] is layer l's input, x[L] the model's output.
    std::vector<void*> x(L + 1);
    x[0] = r.random(T * H, r.tag("x0"));
    std::vector<LayerActivations> acts(L);
    for (int l = 0; l < L; ++l) {
      x[l + 1] = r.zeros(T * H);
      acts[l].x = x[l];
      acts[l].qkv = r.zeros(T * dims_.qkv_dim());
      acts[l].a = r.zeros(T * H);
      acts[l].mid = r.zeros(T * H);
      acts[l].g = r.zeros(T * 2 * dims_.ffn);
      acts[l].h = r.zeros(T * dims_.ffn);
    }
    const void* dout = r.random(T * H, r.tag("dout"));
    void* ping[2] = {r.zeros(T * H), r.zeros(T * H)};
    LayerScratch scratch(r, dims_, T);

    gather(0, "forward");
    for (int l = 0; l < L; ++l) {
      if (l + 1 < L) gather(l + 1, "forward prefetch");
      layer_forward(r, dims_, T, weights_in(full[l % 2]), acts[l], x[l + 1], scratch, l);
    }
    gather(L - 1, "backward");
    const void* dy = dout;
    for (int l = L - 1; l >= 0; --l) {
      if (l - 1 >= 0) gather(l - 1, "backward prefetch");
      void* dx = ping[l % 2];
      layer_backward(r, dims_, T, weights_in(full[l % 2]), acts[l], dy, grads_in(grad_full[l % 2]),
                     /*accumulate=*/false, dx, scratch, l);
      r.collective("L" + std::to_string(l) + " reduce-scatter grads", Kind::ReduceScatter, grad_full[l % 2],
                   grad_shard[l], flat_.shard);
      dy = dx;
    }

    r.output("out", x[L], T * H);
    r.output("dx", dy, T * H);
    for (int l = 0; l < L; ++l) r.output("L" + std::to_string(l) + ".grad.shard", grad_shard[l], flat_.shard);
  }

  ModelDims dims_;
  FlatLayout flat_;
};

}  // namespace

std::unique_ptr<Scenario> make_fsdp(const ScenarioConfig& c) { return std::make_unique<Fsdp>(c); }

}  // namespace tandem::bench::scenarios
