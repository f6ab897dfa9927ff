"""CuPy under `tandem run`: NVRTC-compiled elementwise, reduction and raw kernels (launched through
the driver's cuLaunchKernel), cuBLAS matmuls, and a stream captured into a CUDA graph and replayed.

Inputs come from numpy's seeded generator (the same on every machine). Exact part: integer kernels
and integer-valued float32 matmuls. Approximate part: floating-point reductions, with a tolerance.
"""
import sys

import cupy as cp
import numpy as np

from program_output import checksum, emit, skip

SCRAMBLE = r"""
extern "C" __global__ void scramble(const unsigned int* x, unsigned int* y, int n, unsigned int salt) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    unsigned int v = x[i] + salt;
    v ^= v >> 16; v *= 0x7feb352du; v ^= v >> 15; v *= 0x846ca68bu; v ^= v >> 16;
    y[i] = v;
  }
}
"""


def scramble_on_host(x, salt):
    v = (x + np.uint32(salt)).astype(np.uint32)
    v ^= v >> np.uint32(16)
    v *= np.uint32(0x7FEB352D)
    v ^= v >> np.uint32(15)
    v *= np.uint32(0x846CA68B)
    v ^= v >> np.uint32(16)
    return v


def main():
    try:
        cp.cuda.runtime.getDeviceCount()
    except cp.cuda.runtime.CUDARuntimeError as e:
        return skip("cupy", "cupy " + cp.__version__ + " sees no GPU: " + str(e))
    rng = np.random.default_rng(18)
    words = rng.integers(0, 1 << 32, size=1 << 20, dtype=np.uint64).astype(np.uint32)
    a = rng.integers(-2, 3, size=(512, 512)).astype(np.float32)
    b = rng.integers(-2, 3, size=(512, 256)).astype(np.float32)
    floats = rng.standard_normal(1 << 20).astype(np.float32)
    digest, approx, ok = {}, {}, True

    with np.errstate(over="ignore"):
        d_words = cp.asarray(words)
        affine = cp.ElementwiseKernel("uint32 x", "uint32 y", "y = x * 2654435761u + 12345u", "tandem_affine")
        y = affine(d_words)
        ok &= bool(np.array_equal(cp.asnumpy(y), words * np.uint32(2654435761) + np.uint32(12345)))
        digest["elementwise"] = checksum(cp.asnumpy(y).tobytes())

        total = cp.sum(d_words.astype(cp.uint64))
        ok &= int(total) == int(words.astype(np.uint64).sum())
        digest["sum"] = int(total)

        scramble = cp.RawKernel(SCRAMBLE, "scramble")
        out = cp.empty_like(d_words)
        scramble((256,), (256,), (d_words, out, cp.int32(words.size), cp.uint32(7)))
        ok &= bool(np.array_equal(cp.asnumpy(out), scramble_on_host(words, 7)))
        digest["raw_kernel"] = checksum(cp.asnumpy(out).tobytes())

        # Integer-valued fp32 GEMMs: sums of at most 512 products of values up to 4: exact.
        c = cp.maximum(cp.asarray(a) @ cp.asarray(a), 0) @ cp.asarray(b)
        reference = np.maximum(a.astype(np.int64) @ a.astype(np.int64), 0) @ b.astype(np.int64)
        ok &= bool(np.array_equal(cp.asnumpy(c), reference.astype(np.float32)))
        digest["matmul"] = checksum(cp.asnumpy(c).tobytes())

        # A captured stream: the scramble kernel and an elementwise kernel, replayed three times, each
        # replay feeding the next.
        stream = cp.cuda.Stream(non_blocking=True)
        state = d_words.copy()
        scratch = cp.empty_like(state)
        with stream:
            stream.begin_capture()
            scramble((256,), (256,), (state, scratch, cp.int32(words.size), cp.uint32(11)))
            affine(scratch, state)
            graph = stream.end_capture()
            for _ in range(3):
                graph.launch(stream)
            stream.synchronize()
        expected = words.copy()
        for _ in range(3):
            expected = scramble_on_host(expected, 11) * np.uint32(2654435761) + np.uint32(12345)
        ok &= bool(np.array_equal(cp.asnumpy(state), expected))
        digest["graph"] = checksum(cp.asnumpy(state).tobytes())

    d_floats = cp.asarray(floats)
    approx["float_reductions"] = [float(cp.sum(cp.sin(d_floats))), float(cp.linalg.norm(d_floats)),
                                  float(cp.mean(cp.exp(d_floats * 0.1)))]
    reference = [float(np.sum(np.sin(floats.astype(np.float64)))), float(np.linalg.norm(floats.astype(np.float64))),
                 float(np.mean(np.exp(floats.astype(np.float64) * 0.1)))]
    ok &= all(abs(g - r) <= 1e-3 * max(1.0, abs(r)) for g, r in zip(approx["float_reductions"], reference))
    digest["cupy"] = cp.__version__
    return emit("cupy", digest, approx, ok=ok)


if __name__ == "__main__":
    sys.exit(main())
