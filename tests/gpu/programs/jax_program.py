"""JAX under `tandem run`: jit-compiled XLA programs (XLA's own fused kernels, cuBLAS GEMMs, and the
CUDA graphs XLA builds for them), a scan, and a few gradient steps.

Exact part: integer-valued float32 matrices (every product and sum exact in fp32, at the "highest"
matmul precision, i.e. no TF32) and integer arithmetic. Approximate part: the losses of a few
training steps on normal random data, compared with a tolerance.
"""
import os
import sys

# XLA must not take most of the GPU's memory at start (the GPU may be shared), and its GPU kernels
# are asked to be deterministic. Set before JAX starts.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_gpu_deterministic_ops=true").strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from program_output import checksum, emit, skip  # noqa: E402


def exact_part(key):
    digest, ok = {}, True
    k1, k2, k3 = jax.random.split(key, 3)
    a = jax.random.randint(k1, (256, 256), -2, 3).astype(jnp.float32)
    b = jax.random.randint(k2, (256, 128), -2, 3).astype(jnp.float32)
    words = jax.random.randint(k3, (1 << 16,), 0, 1 << 30, dtype=jnp.int32)

    @jax.jit
    def chain(a, b):
        return jnp.maximum(a @ a, 0.0) @ b + 1.0

    @jax.jit
    def integer_work(w):
        mixed = (w * 1103515245 + 12345) ^ (w >> 7)
        prefix = jax.lax.associative_scan(jnp.add, mixed)
        return jnp.sort(mixed), prefix, jnp.sum(mixed)  # int32 arithmetic wraps, as numpy's does

    y = chain(a, b)
    reference = np.maximum(np.asarray(a, np.int64) @ np.asarray(a, np.int64), 0) @ np.asarray(b, np.int64) + 1
    ok &= bool(np.array_equal(np.asarray(y), reference.astype(np.float32)))
    digest["matmul_chain"] = checksum(np.asarray(y).tobytes())

    sorted_words, prefix, total = integer_work(words)
    w = np.asarray(words, dtype=np.int32)
    with np.errstate(over="ignore"):
        mixed = (w * np.int32(1103515245) + np.int32(12345)) ^ (w >> 7)
        ok &= bool(np.array_equal(np.asarray(sorted_words), np.sort(mixed)))
        ok &= bool(np.array_equal(np.asarray(prefix), np.cumsum(mixed, dtype=np.int32)))
        ok &= int(total) == int(np.sum(mixed, dtype=np.int32))
    digest["sorted"] = checksum(np.asarray(sorted_words).tobytes())
    digest["prefix"] = checksum(np.asarray(prefix).tobytes())
    digest["sum"] = int(total)
    return digest, ok


def approx_part(key):
    k1, k2, k3 = jax.random.split(key, 3)
    params = {"w1": jax.random.normal(k1, (128, 256)) * 0.05, "w2": jax.random.normal(k2, (256, 10)) * 0.05}
    xs = jax.random.normal(k3, (6, 64, 128))
    labels = jnp.arange(6 * 64).reshape(6, 64) % 10

    def loss_fn(p, x, y):
        logits = jax.nn.gelu(x @ p["w1"]) @ p["w2"]
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    @jax.jit
    def step(p, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
        return jax.tree_util.tree_map(lambda q, g: q - 0.05 * g, p, grads), loss

    losses = []
    for i in range(xs.shape[0]):
        params, loss = step(params, xs[i], labels[i])
        losses.append(float(loss))
    finite = all(np.isfinite(losses))
    return {"losses": losses}, finite


def main():
    jax.config.update("jax_default_matmul_precision", "highest")
    try:
        gpus = jax.devices("gpu")
    except RuntimeError as e:  # no GPU backend (a CPU-only jaxlib)
        return skip("jax", "jax " + jax.__version__ + " sees no GPU: " + str(e).splitlines()[0])
    if not gpus:
        return skip("jax", "jax " + jax.__version__ + " sees no GPU")
    key = jax.random.PRNGKey(18)
    k_exact, k_approx = jax.random.split(key)
    digest, exact_ok = exact_part(k_exact)
    approx, approx_ok = approx_part(k_approx)
    digest["jax"] = jax.__version__
    return emit("jax", digest, approx, ok=exact_ok and approx_ok)


if __name__ == "__main__":
    sys.exit(main())
