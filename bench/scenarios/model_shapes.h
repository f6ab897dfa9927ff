#pragma once
// Shapes of the training scenarios, as pure functions (no CUDA, CPU-tested): Llama-like layer
// dimensions, the GEMMs of a layer's forward and backward pass, tensor-parallel sharding, DDP
// gradient buckets, FSDP flat-parameter sharding and the MoE expert split.
//
// Convention: activations are row-major [tokens x features]; a linear layer is y = x . W with W
// stored row-major [in x out]. GEMMs are row-major C[m x n] = op(A)[m x k] . op(B)[k x n].
#include <cstdint>
#include <string>
#include <vector>

namespace tandem::bench::scenarios {

struct ModelDims {
  int64_t hidden = 0;
  int64_t ffn = 0;       // MLP intermediate size (SwiGLU: up and gate are both hidden x ffn)
  int64_t heads = 0;     // query heads
  int64_t kv_heads = 0;  // key/value heads (grouped-query attention when < heads)
  int64_t head_dim = 0;
  int64_t kv_dim() const { return kv_heads * head_dim; }
  // Output width of the fused QKV projection: queries, keys, values.
  int64_t qkv_dim() const { return hidden + 2 * kv_dim(); }
};

// Llama-3-like dimensions; a zero argument takes the default: head_dim 128 (heads = hidden / 128),
// 8 key/value heads (at most `heads`), ffn = 3.5 x hidden rounded up to a multiple of 128
// (hidden 4096 -> 14336, 8192 -> 28672, as Llama 3 8B and 70B). Throws tandem::Error on shapes
// that do not split into whole heads.
ModelDims llama_dims(int64_t hidden, int64_t ffn = 0, int64_t heads = 0, int64_t kv_heads = 0);

// Which way Megatron splits a linear layer across tensor-parallel ranks: column-parallel splits the
// output features (QKV by heads, up/gate), row-parallel the input features (O, down).
enum class Parallel { Column, Row };

struct Linear {
  std::string name;
  int64_t in = 0, out = 0;  // this rank's shard
  Parallel parallel = Parallel::Column;
  int64_t params() const { return in * out; }
};

// The four weight matrices of one transformer layer, in forward order: qkv, o, up_gate (gate and up
// fused, 2 x ffn wide), down. With tp > 1 each is the shard one tensor-parallel rank holds. Throws
// when heads, kv_heads or ffn do not divide by tp.
std::vector<Linear> layer_linears(const ModelDims& dims, int tp = 1);
int64_t layer_params(const ModelDims& dims, int tp = 1);

// `batch` independent GEMMs of the same shape whose operands and outputs each lie back to back in
// memory (matrix i at element i * m*k of A, i * k*n of B, i * m*n of C): what a grouped GEMM over
// equally loaded experts computes, in one launch.
struct GemmDims {
  std::string name;
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t batch = 1;
  double flops() const { return 2.0 * double(m) * double(n) * double(k) * double(batch); }
  bool operator==(const GemmDims& o) const {
    return name == o.name && m == o.m && n == o.n && k == o.k && trans_a == o.trans_a && trans_b == o.trans_b &&
           batch == o.batch;
  }
};
// The same GEMM for `batch` experts at once.
GemmDims batched(GemmDims dims, int64_t batch);

// y[tokens x out] = x[tokens x in] . W[in x out]
GemmDims forward_gemm(const Linear& w, int64_t tokens);
// dx[tokens x in] = dy[tokens x out] . W^T
GemmDims dgrad_gemm(const Linear& w, int64_t tokens);
// dW[in x out] = x^T . dy, x stored [tokens x in]
GemmDims wgrad_gemm(const Linear& w, int64_t tokens);
// One layer's backward GEMMs in execution order: linears in reverse forward order (down, up_gate,
// o, qkv), each dgrad then wgrad.
std::vector<GemmDims> layer_backward_gemms(const ModelDims& dims, int64_t tokens, int tp = 1);

// A DDP gradient bucket: tensors [first, first + count) of the ready-order list, stored
// contiguously at element `offset` of the flat gradient buffer.
struct Bucket {
  int first = 0;
  int count = 0;
  int64_t offset = 0;    // elements, start of the first tensor
  int64_t elements = 0;  // from the first tensor's start to the last tensor's end, padding included
  bool operator==(const Bucket& o) const {
    return first == o.first && count == o.count && offset == o.offset && elements == o.elements;
  }
};

// Offsets of tensors laid out back to back, each starting at a multiple of `align` elements.
std::vector<int64_t> aligned_offsets(const std::vector<int64_t>& elements, int64_t align, int64_t* total = nullptr);

// PyTorch DDP's bucketing after its first iteration (Reducer::rebuild_buckets): gradients in the
// order they become ready, a bucket closing as soon as its size reaches its limit - the first
// bucket's limit is `first_cap_bytes` (dist._DEFAULT_FIRST_BUCKET_BYTES, 1 MiB), later ones
// `cap_bytes` (bucket_cap_mb, 25 MiB). A tensor larger than the limit gets a bucket of its own.
// Tensors start at multiples of `align` elements of the flat buffer (aligned_offsets).
std::vector<Bucket> ddp_buckets(const std::vector<int64_t>& elements_in_ready_order, int64_t element_bytes,
                                int64_t first_cap_bytes, int64_t cap_bytes, int64_t align = 1);

// The gradients of a data-parallel backward pass over `layers` layers in the order backward makes
// them ready: last layer first; within a layer down, up_gate, o, qkv.
std::vector<int64_t> ddp_ready_order_elements(const ModelDims& dims, int layers);

// FSDP's flat parameter of one layer: the tensors back to back (aligned), padded so that it splits
// into `nranks` equal shards, each a multiple of `align` elements.
struct FlatLayout {
  std::vector<int64_t> offsets;  // per tensor, elements
  int64_t used = 0;              // end of the last tensor
  int64_t elements = 0;          // padded total = nranks * shard
  int64_t shard = 0;             // elements per rank
};
FlatLayout flat_layout(const std::vector<int64_t>& tensor_elements, int64_t align, int nranks);

// Expert parallelism: `experts` experts spread evenly over `nranks` ranks; every rank routes
// tokens x top_k (token, choice) pairs; balanced routing gives every expert exactly `capacity`
// pairs from every rank. The all-to-all sends each peer `chunk` elements.
struct MoeSplit {
  int experts_per_rank = 0;
  int64_t capacity = 0;     // pairs per expert per source rank
  int64_t slots = 0;        // experts * capacity: rows of the dispatch buffer
  int64_t expert_rows = 0;  // rows one local expert processes: nranks * capacity
  int64_t chunk = 0;        // elements per peer: experts_per_rank * capacity * hidden
};
// Throws when experts do not divide by nranks or tokens * top_k by experts.
MoeSplit moe_split(int experts, int top_k, int64_t tokens, int64_t hidden, int nranks);

}  // namespace tandem::bench::scenarios
