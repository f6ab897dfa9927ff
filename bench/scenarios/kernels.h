#pragma once
// The scenarios' element-wise kernels (residual add, SwiGLU, the attention stand-in, MoE row
// gathers) and the fills and checks around them. The element-wise kernels are tandem's own, launched
// through ShapedKernel, so shaping policies act on them; every one is a grid-stride loop, correct
// for any grid and residency. The same kernels compute the reference, so shaping can never change
// what the reference expects.
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <memory>

#include "tandem/dtype.h"
#include "tandem/shaped_kernel.h"

namespace tandem::bench::scenarios {

// Local attention dimensions on one rank: heads and kv_heads of head_dim each. A row of the fused
// QKV activation is [q: heads*head_dim | k: kv_heads*head_dim | v: kv_heads*head_dim].
struct AttentionDims {
  int64_t heads = 0, kv_heads = 0, head_dim = 0;
  int64_t q_width() const { return heads * head_dim; }
  int64_t kv_width() const { return kv_heads * head_dim; }
  int64_t qkv_width() const { return q_width() + 2 * kv_width(); }
};

class Elementwise {
 public:
  enum class Kernel { Add, Swiglu, SwigluBackward, Attention, AttentionBackward, GatherRows, CombineRows, SwapBlocks };

  // Creates the kernels for `dtype` on the current device.
  explicit Elementwise(DType dtype);
  ~Elementwise();

  // out = a + b (out may alias a or b).
  void add(void* out, const void* a, const void* b, int64_t n, cudaStream_t stream) const;
  // SwiGLU: g = [rows x 2f] holds gate | up; h[r][j] = silu(gate[r][j]) * up[r][j].
  void swiglu(void* h, const void* g, int64_t rows, int64_t f, cudaStream_t stream) const;
  // Its backward: dg = [d gate | d up] from g and dh = [rows x f].
  void swiglu_backward(void* dg, const void* g, const void* dh, int64_t rows, int64_t f, cudaStream_t stream) const;
  // The attention core stand-in (the attention core is not modelled; this keeps the dependency
  // QKV -> A and costs one pass over QKV): a = q * sigmoid(k) + v, each query head reading the
  // key/value head of its group. a = [rows x q_width], qkv = [rows x qkv_width].
  void attention(void* a, const void* qkv, int64_t rows, const AttentionDims& d, cudaStream_t stream) const;
  // Its exact backward: dqkv from qkv and da (key/value gradients summed over the group's heads).
  void attention_backward(void* dqkv, const void* qkv, const void* da, int64_t rows, const AttentionDims& d,
                          cudaStream_t stream) const;
  // out[q] = scale[q] * in[row_of[q]] for q < rows (scale == nullptr: 1). Rows are `width` wide.
  void gather_rows(void* out, const void* in, const int32_t* row_of, const void* scale, int64_t rows, int64_t width,
                   cudaStream_t stream) const;
  // out[t] = residual[t] + sum_j scale[s] * in[s], s = slots[t * k + j], for t < rows (scale ==
  // nullptr: 1). out may alias residual.
  void combine_rows(void* out, const void* residual, const void* in, const int32_t* slots, const void* scale,
                    int64_t rows, int k, int64_t width, cudaStream_t stream) const;
  // Block transpose: in = [outer][inner] blocks of `block` elements, out = [inner][outer].
  void swap_blocks(void* out, const void* in, int64_t outer, int64_t inner, int64_t block, cudaStream_t stream) const;

  ShapedKernel* kernel(Kernel k) const;

 private:
  DType dtype_;
  std::array<std::unique_ptr<ShapedKernel>, size_t(Kernel::SwapBlocks) + 1> kernels_;  // by Kernel
};

// Uniform values in [lo, hi) from (seed, tag, index) (values.cuh), converted to `dtype`.
void fill_uniform(void* out, DType dtype, int64_t n, uint64_t seed, uint64_t tag, float lo, float hi,
                  cudaStream_t stream);
// out[i] = float(in[i]).
void widen(float* out, const void* in, DType dtype, int64_t n, cudaStream_t stream);
// Adds sum(in[i]^2) to *sum (device double).
void add_sum_of_squares(double* sum, const float* in, int64_t n, cudaStream_t stream);
// Adds to *wrong the number of i with !(|got[i] - ref[i]| <= rtol |ref[i]| + atol) (NaN fails).
void count_mismatches(unsigned long long* wrong, const void* got, DType dtype, const float* ref, int64_t n, float rtol,
                      float atol, cudaStream_t stream);
// Reference collectives over replicas on one device: acc (fp32) += src; dst = round(acc).
void accumulate(float* acc, const void* src, DType dtype, int64_t n, bool first, cudaStream_t stream);
void narrow(void* dst, DType dtype, const float* acc, int64_t n, cudaStream_t stream);

}  // namespace tandem::bench::scenarios
