#include <algorithm>

#include "harness/values.cuh"
#include "scenarios/kernels.h"
#include "tandem/cuda_check.h"

namespace tandem::bench::scenarios {

namespace {

constexpr int kThreads = 256;

// Grid for a grid-stride loop over n items: about four items per thread, at least one block.
unsigned grid_of(int64_t n) {
  const int64_t blocks = (n + 4 * kThreads - 1) / (4 * kThreads);
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, int64_t(1) << 20));
}

#define TANDEM_GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

__device__ __forceinline__ float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

// Each kernel takes one argument struct by value, so ShapedKernel::launch gets one pointer.
template <class T>
struct AddArgs {
  T* out;
  const T* a;
  const T* b;
  int64_t n;
};
template <class T>
__global__ void add_kernel(AddArgs<T> p) {
  TANDEM_GRID_STRIDE(i, p.n) p.out[i] = from_float<T>(to_float(p.a[i]) + to_float(p.b[i]));
}

template <class T>
struct SwigluArgs {
  T* out;       // forward: h [rows x f]; backward: dg [rows x 2f]
  const T* g;   // [rows x 2f]: gate | up
  const T* dh;  // backward only
  int64_t rows, f;
};
template <class T>
__global__ void swiglu_kernel(SwigluArgs<T> p) {
  TANDEM_GRID_STRIDE(i, p.rows * p.f) {
    const int64_t r = i / p.f, j = i % p.f;
    const float gate = to_float(p.g[r * 2 * p.f + j]), up = to_float(p.g[r * 2 * p.f + p.f + j]);
    p.out[i] = from_float<T>(gate * sigmoidf(gate) * up);
  }
}
template <class T>
__global__ void swiglu_backward_kernel(SwigluArgs<T> p) {
  TANDEM_GRID_STRIDE(i, p.rows * p.f) {
    const int64_t r = i / p.f, j = i % p.f;
    const float gate = to_float(p.g[r * 2 * p.f + j]), up = to_float(p.g[r * 2 * p.f + p.f + j]);
    const float dh = to_float(p.dh[i]);
    const float s = sigmoidf(gate);
    const float silu = gate * s, dsilu = s * (1.0f + gate * (1.0f - s));
    p.out[r * 2 * p.f + j] = from_float<T>(dh * up * dsilu);
    p.out[r * 2 * p.f + p.f + j] = from_float<T>(dh * silu);
  }
}

template <class T>
struct AttentionArgs {
  T* out;
  const T* qkv;
  const T* da;  // backward only
  int64_t rows, heads, kv_heads, head_dim;
};
// Query column i (head h = i / head_dim, element e) reads the key/value column of head h's group.
__device__ __forceinline__ int64_t kv_column(int64_t i, int64_t heads, int64_t kv_heads, int64_t head_dim) {
  const int64_t h = i / head_dim, e = i % head_dim;
  return (h / (heads / kv_heads)) * head_dim + e;
}
template <class T>
__global__ void attention_kernel(AttentionArgs<T> p) {
  const int64_t qw = p.heads * p.head_dim, kvw = p.kv_heads * p.head_dim, width = qw + 2 * kvw;
  TANDEM_GRID_STRIDE(i, p.rows * qw) {
    const int64_t r = i / qw, col = i % qw;
    const T* row = p.qkv + r * width;
    const int64_t c = kv_column(col, p.heads, p.kv_heads, p.head_dim);
    p.out[i] = from_float<T>(to_float(row[col]) * sigmoidf(to_float(row[qw + c])) + to_float(row[qw + kvw + c]));
  }
}
template <class T>
__global__ void attention_backward_kernel(AttentionArgs<T> p) {
  const int64_t qw = p.heads * p.head_dim, kvw = p.kv_heads * p.head_dim, width = qw + 2 * kvw;
  const int64_t group = p.heads / p.kv_heads;
  TANDEM_GRID_STRIDE(i, p.rows * width) {
    const int64_t r = i / width, col = i % width;
    const T* row = p.qkv + r * width;
    const T* da = p.da + r * qw;
    float out;
    if (col < qw) {  // d q = da * sigmoid(k)
      out = to_float(da[col]) * sigmoidf(to_float(row[qw + kv_column(col, p.heads, p.kv_heads, p.head_dim)]));
    } else {
      const int64_t c = (col - qw) % kvw;  // key/value column
      const int64_t first_head = (c / p.head_dim) * group, e = c % p.head_dim;
      const float s = sigmoidf(to_float(row[qw + c]));
      float sum = 0;
      for (int64_t h = first_head; h < first_head + group; ++h) {
        const int64_t q = h * p.head_dim + e;
        sum += col < qw + kvw ? to_float(da[q]) * to_float(row[q]) : to_float(da[q]);
      }
      out = col < qw + kvw ? sum * s * (1.0f - s) : sum;  // d k, d v
    }
    p.out[i] = from_float<T>(out);
  }
}

template <class T>
struct GatherArgs {
  T* out;
  const T* in;
  const int32_t* row_of;
  const T* scale;
  int64_t rows, width;
};
template <class T>
__global__ void gather_rows_kernel(GatherArgs<T> p) {
  TANDEM_GRID_STRIDE(i, p.rows * p.width) {
    const int64_t q = i / p.width, col = i % p.width;
    const float v = to_float(p.in[int64_t(p.row_of[q]) * p.width + col]);
    p.out[i] = from_float<T>(p.scale ? v * to_float(p.scale[q]) : v);
  }
}

template <class T>
struct CombineArgs {
  T* out;
  const T* residual;
  const T* in;
  const int32_t* slots;
  const T* scale;
  int64_t rows;
  int k;
  int64_t width;
};
template <class T>
__global__ void combine_rows_kernel(CombineArgs<T> p) {
  TANDEM_GRID_STRIDE(i, p.rows * p.width) {
    const int64_t t = i / p.width, col = i % p.width;
    float sum = to_float(p.residual[i]);
    for (int j = 0; j < p.k; ++j) {
      const int64_t s = p.slots[t * p.k + j];
      const float v = to_float(p.in[s * p.width + col]);
      sum += p.scale ? v * to_float(p.scale[s]) : v;
    }
    p.out[i] = from_float<T>(sum);
  }
}

template <class T>
struct SwapArgs {
  T* out;
  const T* in;
  int64_t outer, inner, block;
};
template <class T>
__global__ void swap_blocks_kernel(SwapArgs<T> p) {
  TANDEM_GRID_STRIDE(i, p.outer * p.inner * p.block) {
    const int64_t b = i / p.block, e = i % p.block;
    const int64_t o = b / p.inner, n = b % p.inner;  // input block (o, n) -> output block (n, o)
    p.out[(n * p.outer + o) * p.block + e] = p.in[i];
  }
}

// A kernel argument as the kernel's element type T: untyped device pointers become T pointers,
// everything else (sizes, index arrays, nullptr) passes as it is.
template <class T>
T* typed(void* p) {
  return static_cast<T*>(p);
}
template <class T>
const T* typed(const void* p) {
  return static_cast<const T*>(p);
}
template <class T, class V>
V typed(V v) {
  return v;
}

// Launches `kernel` over `n` items with the argument struct Args<T>{args...} for `dtype`'s T.
template <template <class> class Args, class... A>
void launch(const ShapedKernel& kernel, DType dtype, int64_t n, cudaStream_t stream, A... args) {
  dispatch_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    Args<T> packed{typed<T>(args)...};
    void* argv[] = {&packed};
    kernel.launch(dim3(grid_of(n)), argv, stream);
  });
}

template <class T>
__global__ void fill_uniform_kernel(T* out, int64_t n, uint64_t seed, uint64_t tag, float lo, float hi) {
  TANDEM_GRID_STRIDE(i, n) {
    const float u = 0.5f * (uniform_pm1(seed, tag, uint64_t(i)) + 1.0f);
    out[i] = from_float<T>(lo + (hi - lo) * u);
  }
}
template <class T>
__global__ void widen_kernel(float* out, const T* in, int64_t n) {
  TANDEM_GRID_STRIDE(i, n) out[i] = to_float(in[i]);
}
template <class T>
__global__ void narrow_kernel(T* out, const float* in, int64_t n) {
  TANDEM_GRID_STRIDE(i, n) out[i] = from_float<T>(in[i]);
}
template <class T>
__global__ void accumulate_kernel(float* acc, const T* src, int64_t n, bool first) {
  TANDEM_GRID_STRIDE(i, n) acc[i] = first ? to_float(src[i]) : acc[i] + to_float(src[i]);
}
__global__ void sum_of_squares_kernel(double* sum, const float* in, int64_t n) {
  double local = 0;
  TANDEM_GRID_STRIDE(i, n) local += double(in[i]) * in[i];
  if (local != 0) atomicAdd(sum, local);
}
template <class T>
__global__ void count_mismatches_kernel(unsigned long long* wrong, const T* got, const float* ref, int64_t n,
                                        float rtol, float atol) {
  unsigned long long local = 0;
  TANDEM_GRID_STRIDE(i, n) {
    const float g = to_float(got[i]), r = ref[i];
    if (!(fabsf(g - r) <= rtol * fabsf(r) + atol)) ++local;
  }
  if (local) atomicAdd(wrong, local);
}

template <class T>
std::unique_ptr<ShapedKernel> shaped(void (*kernel)(T), const char* name) {
  return std::make_unique<ShapedKernel>(reinterpret_cast<const void*>(kernel), name, kThreads);
}

}  // namespace

Elementwise::Elementwise(DType dtype) : dtype_(dtype) {
  dispatch_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    kernels_[size_t(Kernel::Add)] = shaped(&add_kernel<T>, "scenario_add");
    kernels_[size_t(Kernel::Swiglu)] = shaped(&swiglu_kernel<T>, "scenario_swiglu");
    kernels_[size_t(Kernel::SwigluBackward)] = shaped(&swiglu_backward_kernel<T>, "scenario_swiglu_backward");
    kernels_[size_t(Kernel::Attention)] = shaped(&attention_kernel<T>, "scenario_attention_standin");
    kernels_[size_t(Kernel::AttentionBackward)] =
        shaped(&attention_backward_kernel<T>, "scenario_attention_standin_backward");
    kernels_[size_t(Kernel::GatherRows)] = shaped(&gather_rows_kernel<T>, "scenario_gather_rows");
    kernels_[size_t(Kernel::CombineRows)] = shaped(&combine_rows_kernel<T>, "scenario_combine_rows");
    kernels_[size_t(Kernel::SwapBlocks)] = shaped(&swap_blocks_kernel<T>, "scenario_swap_blocks");
  });
}

Elementwise::~Elementwise() = default;

ShapedKernel* Elementwise::kernel(Kernel k) const { return kernels_[size_t(k)].get(); }

void Elementwise::add(void* out, const void* a, const void* b, int64_t n, cudaStream_t stream) const {
  launch<AddArgs>(*kernel(Kernel::Add), dtype_, n, stream, out, a, b, n);
}

void Elementwise::swiglu(void* h, const void* g, int64_t rows, int64_t f, cudaStream_t stream) const {
  launch<SwigluArgs>(*kernel(Kernel::Swiglu), dtype_, rows * f, stream, h, g, nullptr, rows, f);
}

void Elementwise::swiglu_backward(void* dg, const void* g, const void* dh, int64_t rows, int64_t f,
                                  cudaStream_t stream) const {
  launch<SwigluArgs>(*kernel(Kernel::SwigluBackward), dtype_, rows * f, stream, dg, g, dh, rows, f);
}

void Elementwise::attention(void* a, const void* qkv, int64_t rows, const AttentionDims& d, cudaStream_t stream) const {
  launch<AttentionArgs>(*kernel(Kernel::Attention), dtype_, rows * d.q_width(), stream, a, qkv, nullptr, rows, d.heads,
                        d.kv_heads, d.head_dim);
}

void Elementwise::attention_backward(void* dqkv, const void* qkv, const void* da, int64_t rows, const AttentionDims& d,
                                     cudaStream_t stream) const {
  launch<AttentionArgs>(*kernel(Kernel::AttentionBackward), dtype_, rows * d.qkv_width(), stream, dqkv, qkv, da, rows,
                        d.heads, d.kv_heads, d.head_dim);
}

void Elementwise::gather_rows(void* out, const void* in, const int32_t* row_of, const void* scale, int64_t rows,
                              int64_t width, cudaStream_t stream) const {
  launch<GatherArgs>(*kernel(Kernel::GatherRows), dtype_, rows * width, stream, out, in, row_of, scale, rows, width);
}

void Elementwise::combine_rows(void* out, const void* residual, const void* in, const int32_t* slots, const void* scale,
                               int64_t rows, int k, int64_t width, cudaStream_t stream) const {
  launch<CombineArgs>(*kernel(Kernel::CombineRows), dtype_, rows * width, stream, out, residual, in, slots, scale, rows,
                      k, width);
}

void Elementwise::swap_blocks(void* out, const void* in, int64_t outer, int64_t inner, int64_t block,
                              cudaStream_t stream) const {
  launch<SwapArgs>(*kernel(Kernel::SwapBlocks), dtype_, outer * inner * block, stream, out, in, outer, inner, block);
}

void fill_uniform(void* out, DType dtype, int64_t n, uint64_t seed, uint64_t tag, float lo, float hi,
                  cudaStream_t stream) {
  dispatch_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    fill_uniform_kernel<T><<<grid_of(n), kThreads, 0, stream>>>(static_cast<T*>(out), n, seed, tag, lo, hi);
  });
  TANDEM_CUDA_CHECK_LAUNCH();
}

void widen(float* out, const void* in, DType dtype, int64_t n, cudaStream_t stream) {
  dispatch_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    widen_kernel<T><<<grid_of(n), kThreads, 0, stream>>>(out, static_cast<const T*>(in), n);
  });
  TANDEM_CUDA_CHECK_LAUNCH();
}

void add_sum_of_squares(double* sum, const float* in, int64_t n, cudaStream_t stream) {
  sum_of_squares_kernel<<<grid_of(n), kThreads, 0, stream>>>(sum, in, n);
  TANDEM_CUDA_CHECK_LAUNCH();
}

void count_mismatches(unsigned long long* wrong, const void* got, DType dtype, const float* ref, int64_t n, float rtol,
                      float atol, cudaStream_t stream) {
  dispatch_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    count_mismatches_kernel<T>
        <<<grid_of(n), kThreads, 0, stream>>>(wrong, static_cast<const T*>(got), ref, n, rtol, atol);
  });
  TANDEM_CUDA_CHECK_LAUNCH();
}

void accumulate(float* acc, const void* src, DType dtype, int64_t n, bool first, cudaStream_t stream) {
  dispatch_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    accumulate_kernel<T><<<grid_of(n), kThreads, 0, stream>>>(acc, static_cast<const T*>(src), n, first);
  });
  TANDEM_CUDA_CHECK_LAUNCH();
}

void narrow(void* dst, DType dtype, const float* acc, int64_t n, cudaStream_t stream) {
  dispatch_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    narrow_kernel<T><<<grid_of(n), kThreads, 0, stream>>>(static_cast<T*>(dst), acc, n);
  });
  TANDEM_CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::bench::scenarios
