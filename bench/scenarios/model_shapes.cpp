#include "scenarios/model_shapes.h"

#include <algorithm>

#include "tandem/error.h"

namespace tandem::bench::scenarios {

namespace {
int64_t round_up(int64_t v, int64_t multiple) { return (v + multiple - 1) / multiple * multiple; }
std::string num(int64_t v) { return std::to_string(v); }
}  // namespace

ModelDims llama_dims(int64_t hidden, int64_t ffn, int64_t heads, int64_t kv_heads) {
  TANDEM_REQUIRE(hidden > 0, "--hidden must be positive (got " + num(hidden) + ")");
  TANDEM_REQUIRE(ffn >= 0 && heads >= 0 && kv_heads >= 0, "--ffn, --heads and --kv-heads must not be negative");
  ModelDims d;
  d.hidden = hidden;
  if (!heads) {
    TANDEM_REQUIRE(hidden % 128 == 0,
                   "--hidden " + num(hidden) + " is not a multiple of the default head size 128; give --heads");
    heads = hidden / 128;
  }
  TANDEM_REQUIRE(hidden % heads == 0, "--hidden " + num(hidden) + " does not split into " + num(heads) + " heads");
  d.heads = heads;
  d.head_dim = hidden / heads;
  d.kv_heads = kv_heads ? kv_heads : std::min<int64_t>(8, heads);
  TANDEM_REQUIRE(d.kv_heads <= heads && heads % d.kv_heads == 0,
                 "--kv-heads " + num(d.kv_heads) + " must divide the " + num(heads) + " query heads");
  d.ffn = ffn ? ffn : round_up(hidden * 7 / 2, 128);
  return d;
}

std::vector<Linear> layer_linears(const ModelDims& d, int tp) {
  TANDEM_REQUIRE(tp >= 1, "tensor-parallel size must be positive");
  TANDEM_REQUIRE(d.heads % tp == 0 && d.kv_heads % tp == 0,
                 "tensor parallelism over " + num(tp) + " ranks needs heads (" + num(d.heads) + ") and kv heads (" +
                     num(d.kv_heads) + ") divisible by " + num(tp));
  TANDEM_REQUIRE(d.ffn % tp == 0, "tensor parallelism over " + num(tp) + " ranks needs --ffn (" + num(d.ffn) +
                                      ") divisible by " + num(tp));
  return {
      {"qkv", d.hidden, d.qkv_dim() / tp, Parallel::Column},
      {"o", d.hidden / tp, d.hidden, Parallel::Row},
      {"up_gate", d.hidden, 2 * d.ffn / tp, Parallel::Column},
      {"down", d.ffn / tp, d.hidden, Parallel::Row},
  };
}

int64_t layer_params(const ModelDims& d, int tp) {
  int64_t sum = 0;
  for (const auto& w : layer_linears(d, tp)) sum += w.params();
  return sum;
}

GemmDims batched(GemmDims dims, int64_t batch) {
  TANDEM_REQUIRE(batch >= 1, "GEMM '" + dims.name + "': batch " + std::to_string(batch) + " is not positive");
  dims.batch = batch;
  return dims;
}

GemmDims forward_gemm(const Linear& w, int64_t tokens) { return {w.name + ".fwd", tokens, w.out, w.in, false, false}; }
GemmDims dgrad_gemm(const Linear& w, int64_t tokens) { return {w.name + ".dgrad", tokens, w.in, w.out, false, true}; }
GemmDims wgrad_gemm(const Linear& w, int64_t tokens) { return {w.name + ".wgrad", w.in, w.out, tokens, true, false}; }

std::vector<GemmDims> layer_backward_gemms(const ModelDims& d, int64_t tokens, int tp) {
  auto linears = layer_linears(d, tp);
  std::vector<GemmDims> out;
  for (auto it = linears.rbegin(); it != linears.rend(); ++it) {
    out.push_back(dgrad_gemm(*it, tokens));
    out.push_back(wgrad_gemm(*it, tokens));
  }
  return out;
}

std::vector<int64_t> aligned_offsets(const std::vector<int64_t>& elements, int64_t align, int64_t* total) {
  TANDEM_REQUIRE(align >= 1, "alignment must be positive");
  std::vector<int64_t> offsets;
  int64_t at = 0;
  for (int64_t e : elements) {
    TANDEM_REQUIRE(e > 0, "tensor sizes must be positive");
    at = round_up(at, align);
    offsets.push_back(at);
    at += e;
  }
  if (total) *total = at;
  return offsets;
}

std::vector<Bucket> ddp_buckets(const std::vector<int64_t>& elements, int64_t element_bytes, int64_t first_cap_bytes,
                                int64_t cap_bytes, int64_t align) {
  TANDEM_REQUIRE(element_bytes > 0 && first_cap_bytes > 0 && cap_bytes > 0, "bucket limits must be positive");
  const auto offsets = aligned_offsets(elements, align);
  std::vector<Bucket> buckets;
  Bucket current;
  int64_t bytes = 0;  // payload of the open bucket, as DDP counts it (tensor sizes, no padding)
  for (size_t i = 0; i < elements.size(); ++i) {
    if (current.count == 0) {
      current.first = static_cast<int>(i);
      current.offset = offsets[i];
    }
    ++current.count;
    bytes += elements[i] * element_bytes;
    current.elements = offsets[i] + elements[i] - current.offset;
    const int64_t limit = buckets.empty() ? first_cap_bytes : cap_bytes;
    if (bytes >= limit) {
      buckets.push_back(current);
      current = Bucket{};
      bytes = 0;
    }
  }
  if (current.count) buckets.push_back(current);
  return buckets;
}

std::vector<int64_t> ddp_ready_order_elements(const ModelDims& d, int layers) {
  TANDEM_REQUIRE(layers >= 1, "--layers must be at least 1");
  const auto linears = layer_linears(d, 1);
  std::vector<int64_t> out;
  for (int l = layers - 1; l >= 0; --l)
    for (auto it = linears.rbegin(); it != linears.rend(); ++it) out.push_back(it->params());
  return out;
}

FlatLayout flat_layout(const std::vector<int64_t>& tensor_elements, int64_t align, int nranks) {
  TANDEM_REQUIRE(nranks >= 1, "rank count must be positive");
  FlatLayout f;
  f.offsets = aligned_offsets(tensor_elements, align, &f.used);
  f.shard = round_up((f.used + nranks - 1) / nranks, align);
  f.elements = f.shard * nranks;
  return f;
}

MoeSplit moe_split(int experts, int top_k, int64_t tokens, int64_t hidden, int nranks) {
  TANDEM_REQUIRE(experts >= 1 && top_k >= 1 && tokens >= 1 && hidden >= 1 && nranks >= 1,
                 "--experts, --top-k, --seq and --hidden must be positive");
  TANDEM_REQUIRE(top_k <= experts, "--top-k " + num(top_k) + " exceeds --experts " + num(experts));
  TANDEM_REQUIRE(experts % nranks == 0,
                 "--experts " + num(experts) + " must be divisible by the " + num(nranks) + " rank(s)");
  TANDEM_REQUIRE(tokens * top_k % experts == 0, "tokens x top-k (" + num(tokens) + " x " + num(top_k) +
                                                    ") must be divisible by --experts " + num(experts) +
                                                    " for balanced routing");
  MoeSplit s;
  s.experts_per_rank = experts / nranks;
  s.capacity = tokens * top_k / experts;
  s.slots = experts * s.capacity;
  s.expert_rows = nranks * s.capacity;
  s.chunk = s.experts_per_rank * s.capacity * hidden;
  return s;
}

}  // namespace tandem::bench::scenarios
