// Data-parallel backward pass (PyTorch DDP): every rank holds the whole model and its own data, runs
// the backward pass over L layers, and all-reduces the gradients in buckets. A bucket's all-reduce
// is enqueued as soon as its last gradient is written and overlaps the rest of the backward pass;
// the step ends when every reduction is done.
#include "scenarios/layers.h"
#include "tandem/text.h"

namespace tandem::bench::scenarios {
namespace {

constexpr int64_t kAlign = 128;  // elements: every gradient starts 256-byte aligned (bf16)

class DpBackward final : public ReplicatedScenario {
 public:
  explicit DpBackward(const ScenarioConfig& c)
      : ReplicatedScenario(c),
        dims_(llama_dims(c.options.hidden, c.options.ffn, c.options.heads, c.options.kv_heads)),
        buckets_(ddp_buckets(ddp_ready_order_elements(dims_, c.options.layers), int64_t(dtype_size(c.dtype)),
                             bytes_of(c.options.first_bucket_mb), bytes_of(c.options.bucket_mb), kAlign)) {
    TANDEM_REQUIRE(c.options.seq >= 1, "--seq must be positive");
  }

  std::string name() const override { return "dp-backward"; }
  std::string collective() const override { return "all-reduce"; }
  int count() const override { return config().options.layers; }

  std::string describe() const override {
    const auto& o = config().options;
    return "dp-backward " + dtype_text() + " layers=" + std::to_string(o.layers) +
           " hidden=" + std::to_string(dims_.hidden) + " ffn=" + std::to_string(dims_.ffn) +
           " heads=" + std::to_string(dims_.heads) + "/" + std::to_string(dims_.kv_heads) +
           " tokens=" + std::to_string(o.seq) + ": backward pass (8 GEMMs a layer), " +
           std::to_string(buckets_.size()) + " DDP buckets (first " + number(o.first_bucket_mb) + " MiB, then " +
           number(o.bucket_mb) + " MiB) all-reduced as they fill";
  }

 private:
  static int64_t bytes_of(double mib) {
    TANDEM_REQUIRE(mib > 0, "bucket sizes must be positive");
    return static_cast<int64_t>(mib * double(1 << 20));
  }

  void build(Replica& r) const override {
    const auto& o = r.options();
    const int64_t T = o.seq, H = dims_.hidden;
    const int L = o.layers;
    const auto lin = layer_linears(dims_);

    // One flat gradient buffer in ready order, as DDP's buckets view it: a bucket is one range.
    const auto ready = ddp_ready_order_elements(dims_, L);
    int64_t total = 0;
    const auto offsets = aligned_offsets(ready, kAlign, &total);
    void* grads = r.zeros(total);

    // Weights are replicated (the same on every rank); activations and the incoming gradient are
    // each rank's own data.
    std::vector<LayerWeights> weights(L);
    std::vector<LayerActivations> acts(L);
    for (int l = 0; l < L; ++l) {
      for (int i = 0; i < 4; ++i)
        weights[l].w[i] = r.random(lin[i].params(), r.tag("weight." + lin[i].name, l, -1, /*per_rank=*/false));
      acts[l] = random_activations(r, dims_, T, l);
    }
    const void* dout = r.random(T * H, r.tag("dout"));
    void* ping[2] = {r.zeros(T * H), r.zeros(T * H)};
    LayerScratch scratch(r, dims_, T);

    size_t next_bucket = 0;
    int tensor = 0;  // ready-order index of the gradient being written
    const void* in = dout;
    for (int l = L - 1; l >= 0; --l) {
      LayerGrads g;
      // Ready order within a layer: down, up_gate, o, qkv, the reverse of layer_linears() order.
      const int base = (L - 1 - l) * 4;
      for (int i = 0; i < 4; ++i) g.w[kDown - i] = r.at(grads, offsets[base + i]);
      void* dx = ping[l % 2];
      layer_backward(r, dims_, T, weights[l], acts[l], in, g, /*accumulate=*/false, dx, scratch, l, [&](int) {
        // DDP's autograd hook: the gradient is ready; when it completes a bucket, reduce the bucket.
        const int ready_index = tensor++;
        if (next_bucket == buckets_.size()) return;
        const Bucket& b = buckets_[next_bucket];
        if (ready_index == b.first + b.count - 1) {
          void* range = r.at(grads, b.offset);
          r.collective("bucket " + std::to_string(next_bucket) + " all-reduce", Collective::AllReduce, range, range,
                       b.elements);
          ++next_bucket;
        }
      });
      in = dx;
    }
    TANDEM_REQUIRE(next_bucket == buckets_.size(), "dp-backward: not every bucket was reduced");
    for (int l = L - 1; l >= 0; --l) {
      const int base = (L - 1 - l) * 4;
      const char* names[4] = {"down", "up_gate", "o", "qkv"};
      for (int i = 0; i < 4; ++i)
        r.output("L" + std::to_string(l) + "." + names[i] + ".grad", r.at(grads, offsets[base + i]), ready[base + i]);
    }
    r.output("dx", in, T * H);
  }

  ModelDims dims_;
  std::vector<Bucket> buckets_;
};

}  // namespace

std::unique_ptr<Scenario> make_dp_backward(const ScenarioConfig& c) { return std::make_unique<DpBackward>(c); }

}  // namespace tandem::bench::scenarios
