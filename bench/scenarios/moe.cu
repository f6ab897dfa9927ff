// Mixture of experts with expert parallelism (Megatron / DeepSpeed-MoE style): each rank holds
// experts/n SwiGLU experts. Per layer and micro-batch, forward: gather every (token, choice) pair
// into its expert's slot, all-to-all dispatch, sort by local expert, expert GEMMs (one batched
// launch for all local experts, as a grouped GEMM), unsort,
// all-to-all combine, weighted sum plus residual. Backward mirrors it with two more all-to-alls and
// the expert dgrad/wgrad GEMMs. Two (or more) micro-batches are interleaved so that one's expert
// GEMMs run while another's all-to-all does.
//
// Routing is balanced (every expert receives exactly tokens x top_k / experts pairs from every rank,
// a random permutation decides which), so the all-to-all has a fixed size; the router's own GEMM and
// its gradient are not modelled.
#include <numeric>
#include <random>

#include "scenarios/layers.h"

namespace tandem::bench::scenarios {
namespace {

class Moe final : public ReplicatedScenario {
 public:
  explicit Moe(const ScenarioConfig& c)
      : ReplicatedScenario(c),
        dims_(llama_dims(c.options.hidden, c.options.ffn, c.options.heads, c.options.kv_heads)),
        expert_ffn_(c.options.expert_ffn ? c.options.expert_ffn : dims_.ffn),
        split_(moe_split(c.options.experts, c.options.top_k, c.options.seq, dims_.hidden, c.nranks)) {
    TANDEM_REQUIRE(c.options.micro_batches >= 1, "--micro-batches must be at least 1");
    TANDEM_REQUIRE(expert_ffn_ > 0, "--expert-ffn must be positive");
  }

  std::string name() const override { return "moe"; }
  std::string collective() const override { return "all-to-all"; }
  int count() const override { return config().options.micro_batches; }

  std::string describe() const override {
    const auto& o = config().options;
    return "moe " + dtype_text() + " layers=" + std::to_string(o.layers) + " hidden=" + std::to_string(dims_.hidden) +
           " experts=" + std::to_string(o.experts) + " (" + std::to_string(split_.experts_per_rank) +
           " per rank) top-" + std::to_string(o.top_k) + " expert_ffn=" + std::to_string(expert_ffn_) +
           " tokens=" + std::to_string(o.seq) + " micro-batches=" + std::to_string(o.micro_batches) +
           ": forward + backward, balanced routing (" + std::to_string(split_.capacity) +
           " pairs per expert per rank), all-to-all dispatch and combine";
  }

 private:
  // Which (token, choice) pair each dispatch slot holds: slot q of expert q / capacity gets pair
  // perm[q]. Drawn on the host from (seed, rank, layer, micro-batch), so rank r's reference replica
  // routes exactly like rank r.
  struct Routing {
    const int32_t* token_of_slot;
    const int32_t* slots_of_token;  // [tokens x top_k]
  };
  Routing make_routing(Replica& r, int layer, int micro) const {
    const int k = r.options().top_k;
    const int64_t pairs = split_.slots;
    std::vector<int32_t> perm(pairs);
    std::iota(perm.begin(), perm.end(), 0);
    std::mt19937_64 rng(config().seed ^ r.tag("routing", layer, micro));
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<int32_t> token_of_slot(pairs), slots_of_token(pairs);
    for (int64_t q = 0; q < pairs; ++q) {
      token_of_slot[q] = perm[q] / k;
      slots_of_token[perm[q]] = static_cast<int32_t>(q);
    }
    return {r.upload(token_of_slot), r.upload(slots_of_token)};
  }

  void build(Replica& r) const override {
    const auto& o = r.options();
    const int L = o.layers, M = o.micro_batches, n = r.nranks(), k = o.top_k;
    const int E = split_.experts_per_rank;
    const int64_t T = o.seq, H = dims_.hidden, F = expert_ffn_;
    const int64_t S = split_.slots, R = split_.expert_rows, C = split_.capacity;
    using Kind = Collective;
    const Linear up{"expert.up_gate", H, 2 * F, Parallel::Column}, down{"expert.down", F, H, Parallel::Row};

    // Weights and gradients per layer, the local experts' back to back ([E][in x out]), so each
    // expert GEMM runs for all local experts in one batched launch - the grouped GEMM frameworks use
    // (Megatron-Core's grouped GEMM), with equal groups because routing is balanced.
    struct Experts {
      const void *wup, *wdown;
      void *dwup, *dwdown;
    };
    std::vector<Experts> experts(L);
    for (int l = 0; l < L; ++l) {
      Experts& x = experts[l];
      x.wup = r.random(E * up.params(), r.tag("expert.up", l));
      x.wdown = r.random(E * down.params(), r.tag("expert.down", l));
      x.dwup = r.zeros(E * up.params());
      x.dwdown = r.zeros(E * down.params());
    }

    struct Micro {
      std::vector<void*> x, dx, xe, g, h, gate;
      std::vector<Routing> route;
      void *dout, *send, *recv, *y, *ysend, *yrecv;
      void *dsend, *drecv, *dy, *dh, *dg, *dxe, *dxsend, *dxrecv;
    };
    std::vector<Micro> mb(M);
    for (int m = 0; m < M; ++m) {
      Micro& u = mb[m];
      u.x.push_back(r.random(T * H, r.tag("x0", -1, m)));
      for (int l = 0; l < L; ++l) {
        u.x.push_back(r.zeros(T * H));
        u.dx.push_back(r.zeros(T * H));
        u.xe.push_back(r.zeros(E * R * H));
        u.g.push_back(r.zeros(E * R * 2 * F));
        u.h.push_back(r.zeros(E * R * F));
        u.gate.push_back(r.random(S, r.tag("gate", l, m), 0.0f, 1.0f));
        u.route.push_back(make_routing(r, l, m));
      }
      u.dout = r.random(T * H, r.tag("dout", -1, m));
      for (void** p :
           {&u.send, &u.recv, &u.y, &u.ysend, &u.yrecv, &u.dsend, &u.drecv, &u.dy, &u.dxe, &u.dxsend, &u.dxrecv})
        *p = r.zeros(S * H);
      u.dh = r.zeros(E * R * F);
      u.dg = r.zeros(E * R * 2 * F);
    }

    r.begin_interleave(M);
    for (int m = 0; m < M; ++m) {
      r.select_chain(m);
      Micro& u = mb[m];
      for (int l = 0; l < L; ++l) {
        const std::string nm = "mb" + std::to_string(m) + ".L" + std::to_string(l) + ".";
        const Routing& route = u.route[l];
        r.gather_rows(nm + "dispatch", u.send, u.x[l], T, route.token_of_slot, nullptr, S, H);
        r.collective(nm + "all-to-all dispatch", Kind::AllToAll, u.send, u.recv, split_.chunk);
        // Received [source rank][local expert][slot]; each expert wants its rows contiguous.
        r.swap_blocks(nm + "sort", u.xe[l], u.recv, n, E, C * H);
        const Experts& w = experts[l];
        r.gemm(batched(forward_gemm(up, R), E), u.xe[l], w.wup, u.g[l]);
        r.swiglu(nm + "expert swiglu", u.h[l], u.g[l], E * R, F);
        r.gemm(batched(forward_gemm(down, R), E), u.h[l], w.wdown, u.y);
        r.swap_blocks(nm + "unsort", u.ysend, u.y, E, n, C * H);
        r.collective(nm + "all-to-all combine", Kind::AllToAll, u.ysend, u.yrecv, split_.chunk);
        r.combine_rows(nm + "combine", u.x[l + 1], u.x[l], u.yrecv, S, route.slots_of_token, u.gate[l], T, k, H);
      }
      for (int l = L - 1; l >= 0; --l) {
        const std::string nm = "mb" + std::to_string(m) + ".L" + std::to_string(l) + ".bwd.";
        const Routing& route = u.route[l];
        const void* dy = l == L - 1 ? u.dout : u.dx[l + 1];
        const bool acc = m > 0;
        // Combine's backward: each slot gets its gate times its token's gradient.
        r.gather_rows(nm + "dispatch", u.dsend, dy, T, route.token_of_slot, u.gate[l], S, H);
        r.collective(nm + "all-to-all dispatch", Kind::AllToAll, u.dsend, u.drecv, split_.chunk);
        r.swap_blocks(nm + "sort", u.dy, u.drecv, n, E, C * H);
        const Experts& w = experts[l];
        r.gemm(batched(dgrad_gemm(down, R), E), u.dy, w.wdown, u.dh);
        r.gemm(batched(wgrad_gemm(down, R), E), u.h[l], u.dy, w.dwdown, acc);
        r.swiglu_backward(nm + "expert swiglu", u.dg, u.g[l], u.dh, E * R, F);
        r.gemm(batched(dgrad_gemm(up, R), E), u.dg, w.wup, u.dxe);
        r.gemm(batched(wgrad_gemm(up, R), E), u.xe[l], u.dg, w.dwup, acc);
        r.swap_blocks(nm + "unsort", u.dxsend, u.dxe, E, n, C * H);
        r.collective(nm + "all-to-all combine", Kind::AllToAll, u.dxsend, u.dxrecv, split_.chunk);
        // Dispatch's backward: a token's gradient is the residual's plus its pairs'.
        r.combine_rows(nm + "combine", u.dx[l], dy, u.dxrecv, S, route.slots_of_token, nullptr, T, k, H);
      }
    }
    r.end_interleave();

    for (int m = 0; m < M; ++m) {
      r.output("mb" + std::to_string(m) + ".out", mb[m].x[L], T * H);
      r.output("mb" + std::to_string(m) + ".dx", mb[m].dx[0], T * H);
    }
    for (int l = 0; l < L; ++l) {
      const std::string nm = "L" + std::to_string(l) + ".experts.";
      r.output(nm + "up_gate.grad", experts[l].dwup, E * up.params());
      r.output(nm + "down.grad", experts[l].dwdown, E * down.params());
    }
  }

  ModelDims dims_;
  int64_t expert_ffn_;
  MoeSplit split_;
};

}  // namespace

std::unique_ptr<Scenario> make_moe(const ScenarioConfig& c) { return std::make_unique<Moe>(c); }

}  // namespace tandem::bench::scenarios
